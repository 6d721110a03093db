module github.com/ringstore/ringstore

go 1.26.0

require golang.org/x/sys v0.50.0
