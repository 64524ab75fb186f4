// Package godriver tests tierdb through the official MongoDB Go driver,
// for what is the driver's own (its transaction helper, its retryable
// writes): a real PostgreSQL, a freshly built tierdb, a real driver.
package godriver
