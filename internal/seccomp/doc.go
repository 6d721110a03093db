// Package seccomp installs seccomp BPF filters that take io_uring away from
// the running process, the way container runtimes do (Docker 25+ and the
// default profiles of containerd and Podman refuse io_uring_setup with
// EPERM). Tests use it to prove that an engine falls back to pread/pwrite
// with the same results when the kernel refuses rings.
//
// # Caveats
//
// A filter cannot be removed: once DenyIOURing returns nil, io_uring is gone
// for every thread of the process, present and future, and for every
// process it starts, until they exit. It also sets no_new_privs, so set-user-ID
// programs the process executes no longer gain privileges. Call it only in a
// process that exists to run without io_uring, such as a test's child
// process.
//
// It works on Linux on amd64 and arm64; elsewhere it returns an error that
// wraps errors.ErrUnsupported.
package seccomp
