module librate/examples/go

go 1.24.0

require github.com/librate/librate/bindings/go v0.0.0

replace github.com/librate/librate/bindings/go => ../../bindings/go
