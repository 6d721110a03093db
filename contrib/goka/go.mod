module github.com/ringstore/ringstore/contrib/goka

go 1.26.0

require (
	github.com/lovoo/goka v1.1.16
	github.com/ringstore/ringstore v0.0.0-00010101000000-000000000000
)

require (
	github.com/golang/snappy v1.0.0 // indirect
	github.com/syndtr/goleveldb v1.0.0 // indirect
	golang.org/x/net v0.53.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.37.0 // indirect
)

replace github.com/ringstore/ringstore => ../..
