// Package adopttest holds the tests run against both policies of taskgraph.Scheduler, swarm
// run (package swarmrun) and the ralph queue (package queue/runner), over one engine interface:
// what the scheduling promises whichever policy runs it. It has no code of its own.
package adopttest
