// Package qos decides when a request may run and at which performance tier.
//
// It holds the tier vocabulary shared by every layer (Tier, ParseTier) and
// the priority channel (Channel): the admission gate of section
// 3.4, "Custom Semaphore", of Andreoli, Cucinotta and Bristot De Oliveira,
// "Priority-driven Differentiated Performance for NoSQL Database-as-a-Service"
// (entry logic is its Algorithm 2, exit logic its Algorithm 3). The channel
// holds lower-tier requests back while enough higher-tier ones are in
// process, optionally with a starvation guard that still lets one lower-tier
// request through per interval. CPU pools and fair admission build on it.
//
// A request's tier travels as an explicit value (storage.On carries it to
// the backends), never as a context value.
//
// qos is pure logic: it must never do I/O, talk to PostgreSQL, make system
// calls or read the wall clock except through an injected Clock. It must
// never make a high-tier or an internal request wait.
package qos
