package librate

import (
	"context"
	"fmt"
	"log/slog"
	"math/bits"
	"net"
	"net/http"
	"strconv"
	"time"
)

// RequestLimiter is what Middleware consults for each request: a *Keyed (one limit per
// key), or Shared(limiter) (one limit for all keys together).
type RequestLimiter interface {
	// AcquireAt takes n units for key at now, as Keyed.AcquireAt.
	AcquireAt(key string, n int, now time.Duration) (Decision, error)
	// Config is the limit each key gets, advertised in RateLimit-Policy.
	Config() Config
}

// Shared makes one Limiter a RequestLimiter that every key shares: a limit on all the
// traffic through the middleware together, rather than per client.
func Shared(limiter *Limiter) RequestLimiter {
	return shared{limiter}
}

type shared struct{ limiter *Limiter }

func (s shared) AcquireAt(_ string, n int, now time.Duration) (Decision, error) {
	return s.limiter.AcquireAt(n, now)
}

func (s shared) Config() Config { return s.limiter.Config() }

// ContextLimiter is a RequestLimiter that decides over the network, such as the Redis
// limiter of package librate/bindings/go/redis (through its ForMiddleware). Middleware
// passes it each request's context, so a slow or unreachable server costs a request no
// more than the request's own deadline, and, when MiddlewareOptions.Now is nil, lets it
// read its own clock (a Redis server's, which every host shares) instead of librate's,
// which is per host.
type ContextLimiter interface {
	RequestLimiter
	// AcquireContext takes n units for key now, by the limiter's own clock.
	AcquireContext(ctx context.Context, key string, n int) (Decision, error)
	// AcquireAtContext takes n units for key at now on the caller's timeline.
	AcquireAtContext(ctx context.Context, key string, n int, now time.Duration) (Decision, error)
}

// MiddlewareOptions configures NewMiddleware. The zero value limits by remote IP on
// librate's clock, fails closed, and names its policy "default".
type MiddlewareOptions struct {
	// Key picks the key a request counts against; nil means RemoteIP.
	Key func(*http.Request) string
	// Policy names the quota policy in the RateLimit and RateLimit-Policy fields: an
	// sf-string of printable ASCII; empty means "default".
	Policy string
	// FailOpen serves requests when the limiter fails (ErrTableFull, a closed
	// limiter, Redis unreachable or answering an error); otherwise they get 503
	// Service Unavailable. Either way each failure is logged to Logger.
	FailOpen bool
	// Now is the clock passed to AcquireAt; nil means librate's Now, or for a
	// ContextLimiter its own clock.
	Now func() time.Duration
	// Logger records each failure of the limiter, with the error and whether the
	// request was served (fail open, a warning) or refused (fail closed, an error); nil
	// means slog.Default().
	Logger *slog.Logger
}

// Middleware answers requests over their limit with 429 Too Many Requests and
// Retry-After, and tells clients their quota with the RateLimit and RateLimit-Policy
// fields of draft-ietf-httpapi-ratelimit-headers-11 (23 May 2026):
//
//	RateLimit-Policy: "default";q=100;w=60
//	RateLimit: "default";r=42;t=17
//
// q is the quota per window of w seconds (the limit per period, with the period
// rounded up to whole seconds and q scaled down to match, so the advertised rate
// never exceeds the real one); r is Decision.Remaining. On an admitted request t is
// Decision.ResetAfter, the seconds until the quota is whole again; on a 429 it is
// Decision.RetryAfter, equal to Retry-After, as the draft's §6 requires Retry-After to
// reach no earlier than the end of the effective window. Seconds round up.
type Middleware struct {
	limiter RequestLimiter
	// contextual is limiter as a ContextLimiter, or nil.
	contextual ContextLimiter
	key        func(*http.Request) string
	now        func() time.Duration
	// ownClock: the limiter is a ContextLimiter reading its own clock (Now is nil).
	ownClock bool
	failOpen bool
	logger   *slog.Logger
	// name is the policy's sf-string, quoted; policy the whole RateLimit-Policy value.
	name   string
	policy string
}

// NewMiddleware builds a Middleware over limiter. The error is ErrInvalidArgument for
// a nil limiter or a Policy name that is not printable ASCII.
func NewMiddleware(limiter RequestLimiter, options MiddlewareOptions) (*Middleware, error) {
	if limiter == nil {
		return nil, fmt.Errorf("librate: NewMiddleware: nil limiter: %w", ErrInvalidArgument)
	}
	name := options.Policy
	if name == "" {
		name = "default"
	}
	quoted, ok := sfString(name)
	if !ok {
		return nil, fmt.Errorf("librate: NewMiddleware: policy name %q is not printable ASCII: %w", name, ErrInvalidArgument)
	}
	m := &Middleware{limiter: limiter, key: options.Key, now: options.Now, failOpen: options.FailOpen,
		logger: options.Logger, name: quoted}
	m.contextual, _ = limiter.(ContextLimiter)
	if m.key == nil {
		m.key = RemoteIP
	}
	if m.now == nil {
		m.now = Now
		m.ownClock = m.contextual != nil
	}
	if m.logger == nil {
		m.logger = slog.Default()
	}
	quota, window := policyOf(limiter.Config())
	m.policy = quoted + ";q=" + strconv.FormatUint(quota, 10) + ";w=" + strconv.FormatUint(window, 10)
	return m, nil
}

// Wrap returns next behind the limit. A nil next means http.DefaultServeMux, as for
// http.Server; a nil Middleware (from a failed NewMiddleware) fails closed.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	if next == nil {
		next = http.DefaultServeMux
	}
	if m == nil {
		return http.HandlerFunc(unavailable)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		decision, err := m.acquire(r)
		if err != nil {
			if m.failOpen {
				m.logger.LogAttrs(r.Context(), slog.LevelWarn, "librate: the rate limiter failed; request served unlimited (fail open)",
					slog.Any("error", err))
				next.ServeHTTP(w, r)
			} else {
				m.logger.LogAttrs(r.Context(), slog.LevelError, "librate: the rate limiter failed; request refused with 503 (fail closed)",
					slog.Any("error", err))
				unavailable(w, r)
			}
			return
		}
		header := w.Header()
		header.Set("RateLimit-Policy", m.policy)
		if decision.Allowed {
			header.Set("RateLimit", m.item(decision.Remaining, seconds(decision.ResetAfter)))
			next.ServeHTTP(w, r)
			return
		}
		retry := seconds(decision.RetryAfter)
		header.Set("RateLimit", m.item(decision.Remaining, retry))
		header.Set("Retry-After", strconv.FormatUint(retry, 10))
		http.Error(w, "too many requests", http.StatusTooManyRequests)
	})
}

// acquire takes one unit for r's key: with r's context from a ContextLimiter.
func (m *Middleware) acquire(r *http.Request) (Decision, error) {
	key := m.key(r)
	switch {
	case m.ownClock:
		return m.contextual.AcquireContext(r.Context(), key, 1)
	case m.contextual != nil:
		return m.contextual.AcquireAtContext(r.Context(), key, 1, m.now())
	default:
		return m.limiter.AcquireAt(key, 1, m.now())
	}
}

// unavailable answers when the limiter cannot decide and the middleware fails closed.
func unavailable(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
}

// item is one RateLimit list member: the policy with its remaining quota r and
// effective window t.
func (m *Middleware) item(remaining, window uint64) string {
	buf := make([]byte, 0, len(m.name)+48)
	buf = append(buf, m.name...)
	buf = append(buf, ";r="...)
	buf = strconv.AppendUint(buf, sfInteger(remaining), 10)
	buf = append(buf, ";t="...)
	buf = strconv.AppendUint(buf, window, 10)
	return string(buf)
}

// RemoteIP is the default key: the request's remote address without its port (and,
// for IPv6, without brackets). It trusts no header such as X-Forwarded-For: behind a
// proxy, pass a Key that extracts the client the proxy vouches for.
func RemoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// sfIntegerMax is the largest Integer of RFC 9651 (Structured Field Values, §3.3.1).
const sfIntegerMax = 999_999_999_999_999

// sfInteger clamps a count to an sf-integer.
func sfInteger(v uint64) uint64 { return min(v, sfIntegerMax) }

// seconds is d in whole seconds, rounded up, as an sf-integer (and a delay-seconds).
func seconds(d time.Duration) uint64 {
	s := uint64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return sfInteger(s)
}

// policyOf advertises config as a quota q per window of w whole seconds: the period
// rounded up to seconds, and the limit scaled to that window, rounded down.
func policyOf(config Config) (quota, window uint64) {
	window = max(seconds(config.Period), 1)
	windowNs := window * uint64(time.Second)
	period := uint64(config.Period)
	if period == 0 {
		return 0, window
	}
	// limit·windowNs/period in 128 bits; a quotient that overflows 64 bits is clamped.
	hi, lo := bits.Mul64(config.Limit, windowNs)
	if hi >= period {
		return sfIntegerMax, window
	}
	quota, _ = bits.Div64(hi, lo, period)
	return sfInteger(quota), window
}

// sfString quotes s as an sf-string (RFC 9651 §3.3.3): printable ASCII only, with `"`
// and `\` escaped.
func sfString(s string) (string, bool) {
	buf := make([]byte, 0, len(s)+2)
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return "", false
		}
		if c == '"' || c == '\\' {
			buf = append(buf, '\\')
		}
		buf = append(buf, c)
	}
	return string(append(buf, '"')), true
}
