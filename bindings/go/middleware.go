package librate

import (
	"context"
	"fmt"
	"log/slog"
	"math/bits"
	"net"
	"net/http"
	"strconv"
	"strings"
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

// PolicyLimiter is what a Middleware made by NewPolicyMiddleware consults for each
// request: several rules decided together, such as SharedPolicy(policy) (every key shares
// them) or a *KeyedPolicy (per-key rules for the request's key, and global rules).
type PolicyLimiter interface {
	// AcquireAt takes n units for key at now from every rule, or from none, as
	// Policy.AcquireAt.
	AcquireAt(key string, n int, now time.Duration) (PolicyDecision, error)
	// Rules are the rules each key gets, in order, advertised in RateLimit-Policy.
	Rules() []Config
}

// SharedPolicy makes one Policy a PolicyLimiter that every key shares: its rules hold
// for all the traffic through the middleware together.
func SharedPolicy(policy *Policy) PolicyLimiter {
	return sharedPolicy{policy}
}

type sharedPolicy struct{ policy *Policy }

func (s sharedPolicy) AcquireAt(_ string, n int, now time.Duration) (PolicyDecision, error) {
	return s.policy.AcquireAt(n, now)
}

func (s sharedPolicy) Rules() []Config { return s.policy.Rules() }

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
	// sf-string of printable ASCII; empty means "default". NewMiddleware only.
	Policy string
	// RuleNames names a PolicyLimiter's rules in the fields, one name per rule in order,
	// each an sf-string of printable ASCII; nil means "rule0", "rule1", …
	// NewPolicyMiddleware only.
	RuleNames []string
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
//
// Over a PolicyLimiter (NewPolicyMiddleware), RateLimit-Policy lists every rule, one
// list member each, and RateLimit reports the rule that binds, as the draft's example of
// several windows (Appendix B.3.1) does:
//
//	RateLimit-Policy: "hour";q=1000;w=3600, "day";q=5000;w=86400
//	RateLimit: "day";r=100;t=36000
//
// On a 429 that is, of the rules that denied, the one with the longest RetryAfter (the
// policy's, so t still equals Retry-After); on an admitted request, the rule with the
// least Remaining, and of those the one with the longest ResetAfter (whose quota comes
// back last). Ties go to the first rule; r and t are that rule's own.
type Middleware struct {
	limiter RequestLimiter
	// contextual is limiter as a ContextLimiter, or nil.
	contextual ContextLimiter
	// rules replaces limiter in a Middleware from NewPolicyMiddleware.
	rules PolicyLimiter
	key   func(*http.Request) string
	now   func() time.Duration
	// ownClock: the limiter is a ContextLimiter reading its own clock (Now is nil).
	ownClock bool
	failOpen bool
	logger   *slog.Logger
	// names holds each rule's sf-string, quoted; policy the whole RateLimit-Policy value.
	names  []string
	policy string
}

// NewMiddleware builds a Middleware over limiter. The error is ErrInvalidArgument for
// a nil limiter, a Policy name that is not printable ASCII, or RuleNames (which name a
// policy's rules: see NewPolicyMiddleware).
func NewMiddleware(limiter RequestLimiter, options MiddlewareOptions) (*Middleware, error) {
	if limiter == nil {
		return nil, fmt.Errorf("librate: NewMiddleware: nil limiter: %w", ErrInvalidArgument)
	}
	if options.RuleNames != nil {
		return nil, fmt.Errorf("librate: NewMiddleware: RuleNames name a policy's rules; name a limiter's with Policy: %w", ErrInvalidArgument)
	}
	name := options.Policy
	if name == "" {
		name = "default"
	}
	m, err := newMiddleware(options, []Config{limiter.Config()}, []string{name})
	if err != nil {
		return nil, fmt.Errorf("librate: NewMiddleware: %w", err)
	}
	m.limiter = limiter
	m.contextual, _ = limiter.(ContextLimiter)
	m.ownClock = options.Now == nil && m.contextual != nil
	return m, nil
}

// NewPolicyMiddleware builds a Middleware over several rules decided together, each
// named by MiddlewareOptions.RuleNames in the fields. The error is ErrInvalidArgument
// for a nil limiter or one without rules, RuleNames of another length than the rules or
// with a name that is not printable ASCII, or a Policy name (which names a single
// limiter's rule).
func NewPolicyMiddleware(limiter PolicyLimiter, options MiddlewareOptions) (*Middleware, error) {
	if limiter == nil {
		return nil, fmt.Errorf("librate: NewPolicyMiddleware: nil limiter: %w", ErrInvalidArgument)
	}
	if options.Policy != "" {
		return nil, fmt.Errorf("librate: NewPolicyMiddleware: Policy names a limiter's rule; name a policy's with RuleNames: %w", ErrInvalidArgument)
	}
	rules := limiter.Rules()
	names := options.RuleNames
	if names == nil {
		for i := range rules {
			names = append(names, "rule"+strconv.Itoa(i))
		}
	}
	if len(rules) == 0 || len(names) != len(rules) {
		return nil, fmt.Errorf("librate: NewPolicyMiddleware: %d rule names for %d rules: %w", len(names), len(rules), ErrInvalidArgument)
	}
	m, err := newMiddleware(options, rules, names)
	if err != nil {
		return nil, fmt.Errorf("librate: NewPolicyMiddleware: %w", err)
	}
	m.rules = limiter
	return m, nil
}

// newMiddleware is what both constructors share: the options, and the RateLimit-Policy
// field of rules named by names. The error wraps ErrInvalidArgument for a name that is
// not printable ASCII.
func newMiddleware(options MiddlewareOptions, rules []Config, names []string) (*Middleware, error) {
	m := &Middleware{key: options.Key, now: options.Now, failOpen: options.FailOpen, logger: options.Logger}
	if m.key == nil {
		m.key = RemoteIP
	}
	if m.now == nil {
		m.now = Now
	}
	if m.logger == nil {
		m.logger = slog.Default()
	}
	members := make([]string, len(rules))
	for i, rule := range rules {
		quoted, ok := sfString(names[i])
		if !ok {
			return nil, fmt.Errorf("policy name %q is not printable ASCII: %w", names[i], ErrInvalidArgument)
		}
		quota, window := policyOf(rule)
		m.names = append(m.names, quoted)
		members[i] = quoted + ";q=" + strconv.FormatUint(quota, 10) + ";w=" + strconv.FormatUint(window, 10)
	}
	// RFC 9651 §4.1.1 serializes a List with ", " between members.
	m.policy = strings.Join(members, ", ")
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
		own := decision.own
		if decision.Allowed {
			header.Set("RateLimit", m.item(decision.rule, own.Remaining, seconds(own.ResetAfter)))
			next.ServeHTTP(w, r)
			return
		}
		header.Set("RateLimit", m.item(decision.rule, own.Remaining, seconds(own.RetryAfter)))
		header.Set("Retry-After", strconv.FormatUint(seconds(decision.RetryAfter), 10))
		http.Error(w, "too many requests", http.StatusTooManyRequests)
	})
}

// reported is what the fields say of one request: the decision, and the rule RateLimit
// reports with that rule's own decision (a single limiter's: the decision itself).
type reported struct {
	Decision
	rule int
	own  Decision
}

// acquire takes one unit for r's key: with r's context from a ContextLimiter.
func (m *Middleware) acquire(r *http.Request) (reported, error) {
	key := m.key(r)
	var d Decision
	var err error
	switch {
	case m.rules != nil:
		return m.acquireRules(key)
	case m.ownClock:
		d, err = m.contextual.AcquireContext(r.Context(), key, 1)
	case m.contextual != nil:
		d, err = m.contextual.AcquireAtContext(r.Context(), key, 1, m.now())
	default:
		d, err = m.limiter.AcquireAt(key, 1, m.now())
	}
	return reported{d, 0, d}, err
}

// acquireRules takes one unit for key from every rule of a PolicyLimiter, or from none.
func (m *Middleware) acquireRules(key string) (reported, error) {
	d, err := m.rules.AcquireAt(key, 1, m.now())
	if err != nil {
		return reported{}, err
	}
	if len(d.Rules) != len(m.names) {
		return reported{}, fmt.Errorf("librate: a PolicyLimiter decided %d rules, not its %d: %w", len(d.Rules), len(m.names), ErrInternal)
	}
	rule := bindingRule(d)
	return reported{d.Decision, rule, d.Rules[rule]}, nil
}

// bindingRule is the rule RateLimit reports of a policy's decision: denied, of the rules
// that denied, the one with the longest RetryAfter; admitted, the one with the least
// Remaining and, of those, the longest ResetAfter. Ties go to the first rule.
func bindingRule(d PolicyDecision) int {
	binding := 0
	for i, rule := range d.Rules[1:] {
		best := d.Rules[binding]
		var binds bool
		if d.Allowed {
			binds = rule.Remaining < best.Remaining ||
				rule.Remaining == best.Remaining && rule.ResetAfter > best.ResetAfter
		} else {
			binds = !rule.Allowed && (best.Allowed || rule.RetryAfter > best.RetryAfter)
		}
		if binds {
			binding = i + 1
		}
	}
	return binding
}

// unavailable answers when the limiter cannot decide and the middleware fails closed.
func unavailable(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
}

// item is one RateLimit list member: rule with its remaining quota r and effective
// window t.
func (m *Middleware) item(rule int, remaining, window uint64) string {
	name := m.names[rule]
	buf := make([]byte, 0, len(name)+48)
	buf = append(buf, name...)
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
