package events

import "errors"

// Errors returned by the package. Each is wrapped with the file, batch,
// column or option it is about; test them with errors.Is.
var (
	// ErrBadOptions: a GenOptions field is out of range.
	ErrBadOptions = errors.New("events: bad options")
	// ErrUnknownQuery: Run was given a name that Queries does not list.
	ErrUnknownQuery = errors.New("events: unknown query")
	// ErrSchema: a file or record lacks a column the query needs, has it with
	// another type, or lacks the time-range metadata Generate writes.
	ErrSchema = errors.New("events: schema mismatch")
	// ErrBadData: a column holds a value the schema does not allow (a null in
	// a non-nullable column, a dictionary index out of range).
	ErrBadData = errors.New("events: bad data")
	// ErrMismatch: two results differ (Result.Equal).
	ErrMismatch = errors.New("events: results differ")
)
