module github.com/ftmpi/ftmpi

go 1.26.8

require (
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.49.0
)
