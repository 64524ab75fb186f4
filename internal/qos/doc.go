// Package qos decides when a request may run and at which performance tier.
//
// This first part holds only the tier vocabulary shared by every layer. The
// priority channel, CPU pools and fair admission build on it. qos is pure logic:
// it must never do I/O, talk to PostgreSQL or read the wall clock directly.
package qos
