package wal

// SetQueuedHook makes a log opened with o call f each time a request is
// queued for its committer (under the log's mutex: f must not call the log).
func SetQueuedHook(o *Options, f func()) { o.queued = f }

// SetLinkedFdatasync makes a log opened with o write each durable group as
// a write and a linked fdatasync (two requests) instead of one RWF_DSYNC
// write, so that faults can be aimed at either.
func SetLinkedFdatasync(o *Options) { o.linkedFdatasync = true }
