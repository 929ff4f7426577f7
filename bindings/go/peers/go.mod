module librate/bindings/go/peers

go 1.24.0

require (
	golang.org/x/time v0.14.0
	librate/bindings/go v0.0.0
)

replace librate/bindings/go => ../
