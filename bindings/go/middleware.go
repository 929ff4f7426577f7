package librate

import (
	"log/slog"
	"math/bits"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MiddlewareOptions configures NewMiddleware. The zero value limits by remote IP, on
// the limiter's own clock, fails closed, and names a limiter's one rule "default" and a
// policy's rules (a Policy of one rule too) "rule0", "rule1", …
type MiddlewareOptions struct {
	// Key picks the key a request counts against; nil means RemoteIP.
	Key func(*http.Request) string
	// Policy names a single rule (a limiter's) in the RateLimit and RateLimit-Policy
	// fields: an sf-string of printable ASCII; empty means "default".
	Policy string
	// RuleNames names a policy's rules in the fields, one name per rule in order, each
	// an sf-string of printable ASCII; nil means "rule0", "rule1", …
	RuleNames []string
	// Costs are the units each request takes of each rule, one cost per rule in order
	// (a post costs [1, 0, 0, 1]: the post rule and the global rule), each from 0 to its
	// rule's most at once (GCRA: Burst, or Limit when 0; the windows: Limit), not all 0; a
	// rule of cost 0 takes no part. nil means 1 of every rule. A Redis policy takes one
	// cost for every rule: other costs are its error, ErrUnsupported.
	Costs []int
	// FailOpen serves requests when the limiter fails (ErrTableFull, a closed
	// limiter, Redis unreachable or answering an error); otherwise they get 503
	// Service Unavailable. Either way each failure is logged to Logger.
	FailOpen bool
	// Now is the clock the middleware passes the limiter; nil means the limiter's own
	// (librate's, or a Redis server's, which every host shares).
	Now func() time.Time
	// Logger records each denial at Info, with the rule that denied (attributes rule,
	// its index, rule_name and shadow), and each failure of the limiter, with the error
	// and whether the request was served (fail open, a warning) or refused (fail closed,
	// an error); nil means slog.Default().
	Logger *slog.Logger
	// RuleHeader names a response field that names the rule that denied, its name as an
	// sf-string (RateLimit-Rule: "minute"), on each 429 and, in Shadow, on each request
	// that would have been denied. draft-ietf-httpapi-ratelimit-headers-11 defines no
	// such field: the name is yours to choose, a token; empty means no field.
	RuleHeader string
	// Shadow runs the limiter without enforcing it, to see what a new limit would do: it
	// decides (and counts) every request and logs each would-be denial, but serves every
	// request, without the RateLimit fields (no client should slow down for a limit not
	// in force), a request it cannot decide too.
	Shadow bool
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
// Over a policy (a RequestLimiter of several rules), RateLimit-Policy lists every rule,
// one list member each, and RateLimit reports the rule that binds, as the draft's example of
// several windows (Appendix B.3.1) does:
//
//	RateLimit-Policy: "hour";q=1000;w=3600, "day";q=5000;w=86400
//	RateLimit: "day";r=100;t=36000
//
// On a 429 that is, of the rules that denied, the one with the longest RetryAfter (the
// policy's, so t still equals Retry-After); on an admitted request, the rule with the
// least Remaining, and of those the one with the longest ResetAfter (whose quota comes
// back last). Ties go to the first rule; r and t are that rule's own. With
// MiddlewareOptions.Costs the binding rule is one of those the request costs.
type Middleware struct {
	limiter RequestLimiter
	// costs are MiddlewareOptions.Costs: nil, a request takes 1 of every rule.
	costs []int
	key   func(*http.Request) string
	// now is MiddlewareOptions.Now; nil, the limiter's own clock.
	now      func() time.Time
	failOpen bool
	logger   *slog.Logger
	// ruleHeader is MiddlewareOptions.RuleHeader, canonical; empty, no such field.
	ruleHeader string
	shadow     bool
	// ruleNames are the rules' names; names each one's sf-string, quoted; policy the
	// whole RateLimit-Policy value.
	ruleNames []string
	names     []string
	policy    string
}

// NewMiddleware builds a Middleware over limiter. The error is ErrInvalidArgument for a
// nil limiter or one without rules, a Policy name for several rules, RuleNames of
// another length than the rules, a name that is not printable ASCII, a RuleHeader that
// is no token, or Costs that are not one per rule, each from 0 to the most its rule
// admits at once, not all 0.
func NewMiddleware(limiter RequestLimiter, options MiddlewareOptions) (*Middleware, error) {
	if limiter == nil {
		return nil, detailed(ErrInvalidArgument, "NewMiddleware: nil limiter")
	}
	rules := limiter.Rules()
	_, policy := limiter.(PolicyLimiter)
	names, err := ruleNames(options, len(rules), policy)
	if err != nil {
		return nil, err
	}
	m, err := newMiddleware(options, rules, names)
	if err != nil {
		return nil, err
	}
	m.limiter = limiter
	if options.Costs != nil {
		if err := checkCosts(options.Costs, rules); err != nil {
			return nil, err
		}
		m.costs = slices.Clone(options.Costs)
	}
	return m, nil
}

// NewPolicyMiddleware is NewMiddleware.
//
// Deprecated: use NewMiddleware, which takes a policy as it takes a limiter;
// NewPolicyMiddleware goes in the next release.
func NewPolicyMiddleware(limiter RequestLimiter, options MiddlewareOptions) (*Middleware, error) {
	return NewMiddleware(limiter, options)
}

// PolicyLimiter is a RequestLimiter that is a policy of rules: Policy, KeyedPolicy and
// librateredis.Policy. NewMiddleware names its rules "rule0", "rule1", … unless
// MiddlewareOptions names them, even when there is one rule, as every binding names a
// policy's (bindings/testdata/policy_headers.json); another RequestLimiter of one rule
// is a limiter, whose rule is "default".
type PolicyLimiter interface {
	RequestLimiter
	// IsPolicy marks the type as a policy; it does nothing.
	IsPolicy()
}

// ruleNames names a limiter's rules in the fields: Policy (or "default") for a single
// rule that is no policy's, RuleNames (or "rule0", "rule1", …) for a policy's or for
// several.
func ruleNames(options MiddlewareOptions, rules int, policy bool) ([]string, error) {
	switch {
	case rules == 0:
		return nil, detailed(ErrInvalidArgument, "NewMiddleware: a limiter without rules")
	case options.Policy != "" && rules > 1:
		return nil, detailed(ErrInvalidArgument, "NewMiddleware: Policy names a single rule; name a policy's %d with RuleNames", rules)
	case options.Policy != "" && options.RuleNames != nil:
		return nil, detailed(ErrInvalidArgument, "NewMiddleware: Policy and RuleNames both name the rule")
	case options.RuleNames != nil && len(options.RuleNames) != rules:
		return nil, detailed(ErrInvalidArgument, "NewMiddleware: %d rule names for %d rules", len(options.RuleNames), rules)
	case options.RuleNames != nil:
		return options.RuleNames, nil
	case rules == 1 && options.Policy != "":
		return []string{options.Policy}, nil
	case rules == 1 && !policy:
		return []string{"default"}, nil
	}
	names := make([]string, rules)
	for i := range names {
		names[i] = "rule" + strconv.Itoa(i)
	}
	return names, nil
}

// checkCosts checks MiddlewareOptions.Costs against rules: one cost per rule, each from
// 0 to the most its rule admits at once, not all 0. The error wraps ErrInvalidArgument.
func checkCosts(costs []int, rules []Config) error {
	if len(costs) != len(rules) {
		return detailed(ErrInvalidArgument, "NewMiddleware: Costs has %d costs for %d rules", len(costs), len(rules))
	}
	taking := false
	for i, cost := range costs {
		if most := mostAtOnce(rules[i]); cost < 0 || uint64(cost) > most {
			return detailed(ErrInvalidArgument, "NewMiddleware: Costs[%d] is %d: must be 0 to rule %d's most at once, %d", i, cost, i, most)
		}
		taking = taking || cost > 0
	}
	if !taking {
		return detailed(ErrInvalidArgument, "NewMiddleware: Costs are all 0: a request would take from no rule")
	}
	return nil
}

// mostAtOnce is the most units config admits at once: GCRA's Burst (0 means Limit), a
// window's Limit.
func mostAtOnce(config Config) uint64 {
	if config.Algorithm == GCRA && config.Burst != 0 {
		return config.Burst
	}
	return config.Limit
}

// newMiddleware is what both constructors share: the options, and the RateLimit-Policy
// field of rules named by names. The error wraps ErrInvalidArgument for a name that is
// not printable ASCII.
func newMiddleware(options MiddlewareOptions, rules []Config, names []string) (*Middleware, error) {
	// A limiter in shadow refuses nothing, not even a request it cannot decide.
	m := &Middleware{key: options.Key, now: options.Now, failOpen: options.FailOpen || options.Shadow,
		logger: options.Logger, shadow: options.Shadow, ruleNames: names}
	if options.RuleHeader != "" {
		if !isToken(options.RuleHeader) {
			return nil, detailed(ErrInvalidArgument, "NewMiddleware: RuleHeader %q is no field name (an RFC 9110 token)", options.RuleHeader)
		}
		m.ruleHeader = http.CanonicalHeaderKey(options.RuleHeader)
	}
	if m.key == nil {
		m.key = RemoteIP
	}
	if m.logger == nil {
		m.logger = slog.Default()
	}
	members := make([]string, len(rules))
	for i, rule := range rules {
		quoted, ok := sfString(names[i])
		if !ok {
			return nil, detailed(ErrInvalidArgument, "NewMiddleware: rule name %q is not printable ASCII", names[i])
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
		if m.Admit(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// Admit decides r and reports whether to serve it, for a framework whose middleware is
// not an http.Handler wrapper (gin's handlers take a *gin.Context; see docs/go.md): on
// true the RateLimit fields are set on w and the caller serves the request; on false
// the answer (429, or 503 when the limiter fails closed) is written and the caller
// stops. A nil Middleware answers 503.
func (m *Middleware) Admit(w http.ResponseWriter, r *http.Request) bool {
	if m == nil {
		unavailable(w, r)
		return false
	}
	decision, err := m.acquire(r)
	if err != nil {
		if m.failOpen {
			m.logger.LogAttrs(r.Context(), slog.LevelWarn, "librate: the rate limiter failed; request served unlimited (fail open)",
				slog.Any("error", err))
			return true
		}
		m.logger.LogAttrs(r.Context(), slog.LevelError, "librate: the rate limiter failed; request refused with 503 (fail closed)",
			slog.Any("error", err))
		unavailable(w, r)
		return false
	}
	header := w.Header()
	named := !decision.Allowed
	if named {
		message := "librate: a rule denied the request"
		if m.shadow {
			message = "librate: a rule would deny the request (shadow)"
		}
		m.denied(r, header, decision.deniedBy, message, m.shadow, true)
	}
	if decision.shadowDeniedBy >= 0 {
		m.denied(r, header, decision.shadowDeniedBy, "librate: a shadow rule would deny the request", true, !named)
	}
	if m.shadow || decision.Allowed && decision.rule < 0 {
		return true
	}
	if decision.rule >= 0 {
		header.Set("RateLimit-Policy", m.policy)
		own := decision.own
		window := own.RetryAfter
		if decision.Allowed {
			window = own.ResetAfter
		}
		header.Set("RateLimit", m.item(decision.rule, own.Remaining, seconds(window)))
	}
	if decision.Allowed {
		return true
	}
	header.Set("Retry-After", strconv.FormatUint(seconds(decision.RetryAfter), 10))
	http.Error(w, "too many requests", http.StatusTooManyRequests)
	return false
}

// denied logs message of rule (it denied r, or would have: shadow), and names it in
// the RuleHeader field, if the middleware sends one and name says to. The rule is the
// first, in the order given, that denied: the one a policy's counts charge the denial
// to (RateLimit may report another: of the rules that denied, the longest wait).
func (m *Middleware) denied(r *http.Request, header http.Header, rule int, message string, shadow, name bool) {
	m.logger.LogAttrs(r.Context(), slog.LevelInfo, message,
		slog.Int("rule", rule), slog.String("rule_name", m.ruleNames[rule]), slog.Bool("shadow", shadow))
	if name && m.ruleHeader != "" {
		header.Set(m.ruleHeader, m.names[rule])
	}
}

// reported is what the fields say of one request: the decision, the rule RateLimit
// reports with that rule's own decision (a single limiter's: the decision itself; -1
// when every rule the request costs is a shadow rule), the first rule that denied (-1
// when admitted), and the first shadow rule that would have (-1 when none).
type reported struct {
	Decision
	rule           int
	own            Decision
	deniedBy       int
	shadowDeniedBy int
}

// acquire takes one unit of every rule (or Costs) for r's key, with r's context.
func (m *Middleware) acquire(r *http.Request) (reported, error) {
	var t time.Time
	if m.now != nil {
		t = m.now()
	}
	d, err := m.limiter.LimitRequest(r.Context(), m.key(r), t, m.costs)
	if err != nil {
		return reported{}, err
	}
	if len(d.Rules) != len(m.names) {
		return reported{}, detailed(ErrInternal, "a RequestLimiter decided %d rules, not its %d", len(d.Rules), len(m.names))
	}
	if !d.Allowed && (d.DeniedBy < 0 || d.DeniedBy >= len(m.names)) {
		return reported{}, detailed(ErrInternal, "a RequestLimiter denied by rule %d of its %d", d.DeniedBy, len(m.names))
	}
	rule := bindingRule(d, m.costs)
	var own Decision
	if rule >= 0 {
		own = d.Rules[rule]
	}
	return reported{d.Decision, rule, own, d.DeniedBy, d.ShadowDeniedBy()}, nil
}

// bindingRule is the rule RateLimit reports of a policy's decision, of the enforced
// rules the request costs (costs nil: every rule; else those of a cost above 0; a shadow
// rule binds nothing): denied, of the rules that denied, the one with the longest
// RetryAfter; admitted, the one with the least Remaining and, of those, the longest
// ResetAfter. Ties go to the first rule; -1 when the request costs no enforced rule.
func bindingRule(d PolicyDecision, costs []int) int {
	binding := -1
	for i, rule := range d.Rules {
		if costs != nil && costs[i] == 0 || d.Shadow>>i&1 == 1 {
			continue
		}
		if binding < 0 {
			binding = i
			continue
		}
		best := d.Rules[binding]
		var binds bool
		if d.Allowed {
			binds = rule.Remaining < best.Remaining ||
				rule.Remaining == best.Remaining && rule.ResetAfter > best.ResetAfter
		} else {
			binds = !rule.Allowed && (best.Allowed || rule.RetryAfter > best.RetryAfter)
		}
		if binds {
			binding = i
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

// isToken reports whether s is an RFC 9110 token (§5.6.2), as a field name must be.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return s != ""
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
