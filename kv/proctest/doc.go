// Package proctest holds kv's process-level tests: each starts fresh child
// processes (this package's test binary) with their own environment, so the
// io_uring switch, a seccomp filter and strace act on a whole process.
// The package has no code of its own.
package proctest
