// Package router decides which PostgreSQL node serves a read: the primary,
// a standby within the staleness the read accepts, or, for adaptive reads,
// a share of standbys that the Balancer adjusts to where the load is
// (seed 001, Decongestant, Algorithm 1).
//
// It is pure logic: node state comes in (staleness, requests in flight),
// a choice goes out. Time comes from the caller, so scripted traces with a
// fake clock test it. It must never talk to PostgreSQL or know SQL.
package router
