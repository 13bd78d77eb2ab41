// Package swarm is swarm's workers as a library.
package swarm
