package wal

// SetQueuedHook makes a log opened with o call f each time a request is
// queued for its committer (under the log's mutex: f must not call the log).
func SetQueuedHook(o *Options, f func()) { o.queued = f }
