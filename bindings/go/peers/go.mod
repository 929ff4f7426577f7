module github.com/librate/librate/bindings/go/peers

go 1.24.0

require (
	golang.org/x/time v0.14.0
	github.com/librate/librate/bindings/go v0.0.0
)

replace github.com/librate/librate/bindings/go => ../
