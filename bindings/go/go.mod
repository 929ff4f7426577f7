module librate/bindings/go

go 1.24.0

require golang.org/x/time v0.14.0
