module github.com/librate/librate/bindings/go

go 1.24.0
