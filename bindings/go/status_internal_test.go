package librate

import "testing"

// statusError maps every C status of docs/c.md by number to its sentinel (the same
// boxed value, so returning it does not allocate), and anything else to Error{Code}.
func TestStatusError(t *testing.T) {
	want := map[int32]error{
		-1: ErrClosed, -2: ErrInvalidConfig, -3: ErrInsufficientCapacity,
		-4: ErrTableFull, -5: ErrUnsupported, -6: ErrInternal, -8: ErrIncompatible,
		-9: ErrReply,
	}
	for code, sentinel := range want {
		if got := statusError(_Ctype_int32_t(code)); got != sentinel {
			t.Errorf("statusError(%d) = %v, want %v", code, got, sentinel)
		}
	}
	for _, code := range []int32{-7, 2, -1000} {
		if got := statusError(_Ctype_int32_t(code)); got != (Error{Code: code}) {
			t.Errorf("statusError(%d) = %#v, want Error{%d}", code, got, code)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = statusError(-4) }); allocs != 0 {
		t.Errorf("statusError allocates %v times", allocs)
	}
}
