module librate/examples/go

go 1.24.0

require librate/bindings/go v0.0.0

replace librate/bindings/go => ../../bindings/go
