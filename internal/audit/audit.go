package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	apiaudit "k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"plainkube.dev/plainkube/internal/auth"
)

// Options configure a Logger, as upstream's --audit-log-* flags.
type Options struct {
	// Path is the log file ("-": standard output).
	Path string
	// PolicyFile is the audit.k8s.io/v1 Policy.
	PolicyFile string
	// MaxAge (days), MaxBackups and MaxSize (MiB) rotate the file; zero
	// keeps every file, and rotates at lumberjack's 100 MiB.
	MaxAge, MaxBackups, MaxSize int
}

// Logger evaluates the policy for each request and writes its events.
type Logger struct {
	evaluator apiaudit.PolicyRuleEvaluator
	mu        sync.Mutex
	out       io.Writer
	closer    io.Closer
}

// New reads the policy and opens the log.
func New(o Options) (*Logger, error) {
	if o.PolicyFile == "" {
		return nil, fmt.Errorf("--audit-log-path needs --audit-policy-file")
	}
	p, err := policy.LoadPolicyFromFile(o.PolicyFile)
	if err != nil {
		return nil, err
	}
	l := &Logger{evaluator: policy.NewPolicyRuleEvaluator(p)}
	if o.Path == "-" {
		l.out = os.Stdout
		return l, nil
	}
	lj := &lumberjack.Logger{Filename: o.Path, MaxAge: o.MaxAge, MaxBackups: o.MaxBackups, MaxSize: o.MaxSize, Compress: false}
	l.out, l.closer = lj, lj
	return l, nil
}

// Close closes the log file.
func (l *Logger) Close() error {
	if l.closer == nil {
		return nil
	}
	return l.closer.Close()
}

// Request is the audit of one request: Begin makes it (nil when the
// policy's level is None), the handler runs with Writer and Body, then
// End writes its last stage.
type Request struct {
	l           *Logger
	event       auditv1.Event
	omit        map[auditinternal.Stage]bool
	reqBody     *capture
	w           *responseWriter
	longRunning bool
	contentType string // the request body's
}

// Begin evaluates the policy for the request with attributes a and, unless
// its level is None, writes RequestReceived and returns the Request. The
// response carries the Audit-ID header.
func (l *Logger) Begin(w http.ResponseWriter, r *http.Request, a auth.Attributes, impersonatedBy *auth.User, longRunning bool) *Request {
	cfg := l.evaluator.EvaluatePolicyRule(attributesRecord(a))
	if cfg.Level == auditinternal.LevelNone {
		return nil
	}
	id := r.Header.Get("Audit-ID")
	if id == "" {
		id = string(uuid.NewUUID())
	}
	w.Header().Set("Audit-ID", id)
	now := metav1.NewMicroTime(time.Now())
	ev := auditv1.Event{TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: auditv1.SchemeGroupVersion.String()},
		Level: auditv1.Level(cfg.Level), AuditID: types.UID(id), RequestURI: r.URL.RequestURI(), Verb: a.Verb,
		User: a.User.UserInfo(), SourceIPs: sourceIPs(r), UserAgent: r.UserAgent(), RequestReceivedTimestamp: now, StageTimestamp: now}
	if impersonatedBy != nil {
		// As upstream: user is who authenticated, impersonatedUser whom
		// the request acts as.
		ev.User, ev.ImpersonatedUser = impersonatedBy.UserInfo(), ptrTo(a.User.UserInfo())
	}
	if a.IsResource {
		ev.ObjectRef = &auditv1.ObjectReference{Resource: a.Resource, Namespace: a.Namespace, Name: a.Name,
			APIGroup: a.APIGroup, APIVersion: a.APIVersion, Subresource: a.Subresource}
	}
	rq := &Request{l: l, event: ev, omit: map[auditinternal.Stage]bool{}, longRunning: longRunning, contentType: r.Header.Get("Content-Type")}
	for _, s := range cfg.OmitStages {
		rq.omit[s] = true
	}
	if cfg.Level.GreaterOrEqual(auditinternal.LevelRequest) && r.Body != nil {
		rq.reqBody = &capture{r: r.Body}
	}
	rq.w = &responseWriter{ResponseWriter: w, keep: cfg.Level.GreaterOrEqual(auditinternal.LevelRequestResponse) && !longRunning, rq: rq}
	rq.write(auditinternal.StageRequestReceived)
	return rq
}

// Writer is the response writer the handler must use.
func (rq *Request) Writer() http.ResponseWriter { return rq.w }

// Body is the request body the handler must read (kept for the log at
// level Request and above).
func (rq *Request) Body(body io.ReadCloser) io.ReadCloser {
	if rq.reqBody == nil {
		return body
	}
	return rq.reqBody
}

// ToJSON turns a body of contentType into JSON for the log (nil: it
// cannot): the API server's, which knows protobuf and YAML.
type ToJSON func(contentType string, body []byte) []byte

// End writes the ResponseComplete stage (Panic if panicked); toJSON turns
// the bodies kept into the Event's objects.
func (rq *Request) End(panicked any, toJSON ToJSON) {
	if panicked != nil {
		rq.event.ResponseStatus = &metav1.Status{Code: http.StatusInternalServerError, Status: metav1.StatusFailure,
			Message: fmt.Sprintf("APIServer panic'd: %v", panicked)}
		rq.write(auditinternal.StagePanic)
		return
	}
	var respJSON []byte
	if len(rq.w.body) > 0 {
		respJSON = toJSON(rq.w.Header().Get("Content-Type"), rq.w.body)
	}
	rq.event.ResponseStatus = responseStatus(rq.w.code, respJSON)
	if rq.reqBody != nil && len(rq.reqBody.data) > 0 {
		if j := toJSON(rq.contentType, rq.reqBody.data); j != nil {
			rq.event.RequestObject = &runtime.Unknown{Raw: j, ContentType: runtime.ContentTypeJSON}
		}
	}
	if rq.w.keep && respJSON != nil {
		rq.event.ResponseObject = &runtime.Unknown{Raw: respJSON, ContentType: runtime.ContentTypeJSON}
	}
	rq.write(auditinternal.StageResponseComplete)
}

func (rq *Request) write(stage auditinternal.Stage) {
	if rq.omit[stage] {
		return
	}
	rq.event.Stage = auditv1.Stage(stage)
	if stage != auditinternal.StageRequestReceived {
		rq.event.StageTimestamp = metav1.NewMicroTime(time.Now())
	}
	line, err := json.Marshal(&rq.event)
	if err != nil {
		return
	}
	rq.l.mu.Lock()
	defer rq.l.mu.Unlock()
	rq.l.out.Write(append(line, '\n')) //nolint:errcheck // an audit write that fails cannot be reported anywhere better
}

// responseStatus is the Status the log records: the response's own Status
// when it is one, else its code.
func responseStatus(code int, body []byte) *metav1.Status {
	if code == 0 {
		code = http.StatusOK
	}
	st := &metav1.Status{Code: int32(code)}
	if code >= 300 {
		var s metav1.Status
		if json.Unmarshal(body, &s) == nil && s.Kind == "Status" {
			st.Status, st.Message, st.Reason, st.Details = s.Status, s.Message, s.Reason, s.Details
		}
	}
	return st
}

// capture keeps what is read through it.
type capture struct {
	r    io.ReadCloser
	data []byte
}

func (c *capture) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.data = append(c.data, p[:n]...)
	return n, err
}

func (c *capture) Close() error { return c.r.Close() }

// responseWriter records the status code, keeps the body when asked (and
// the first bytes always, for an error's Status), and writes
// ResponseStarted for a long-running request when its headers go out.
type responseWriter struct {
	http.ResponseWriter
	rq   *Request
	keep bool
	code int
	body []byte
}

// errorBodyLimit is how much of a response is kept to read its Status.
const errorBodyLimit = 64 << 10

func (w *responseWriter) WriteHeader(code int) {
	w.started(code)
	w.ResponseWriter.WriteHeader(code)
}

// started records the response's code once, and for a long-running
// request writes ResponseStarted.
func (w *responseWriter) started(code int) {
	if w.code != 0 {
		return
	}
	w.code = code
	if w.rq.longRunning {
		w.rq.event.ResponseStatus = &metav1.Status{Code: int32(code)}
		w.rq.write(auditinternal.StageResponseStarted)
	}
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.keep || (w.code >= 300 && len(w.body) < errorBodyLimit) {
		w.body = append(w.body, p...)
	}
	return w.ResponseWriter.Write(p)
}

func (w *responseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands the connection over (exec, attach and port-forward over
// SPDY), once the upgrade's headers are recorded.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("%T cannot hijack", w.ResponseWriter)
	}
	w.started(http.StatusSwitchingProtocols)
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func attributesRecord(a auth.Attributes) authorizer.Attributes {
	return &authorizer.AttributesRecord{User: &user.DefaultInfo{Name: a.User.Name, UID: a.User.UID, Groups: a.User.Groups, Extra: a.User.Extra},
		Verb: a.Verb, Namespace: a.Namespace, APIGroup: a.APIGroup, APIVersion: a.APIVersion, Resource: a.Resource,
		Subresource: a.Subresource, Name: a.Name, ResourceRequest: a.IsResource, Path: a.Path}
}

// sourceIPs are X-Forwarded-For's addresses, X-Real-Ip, then the peer's,
// as upstream's.
func sourceIPs(r *http.Request) []string {
	var ips []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		for _, ip := range strings.Split(h, ",") {
			if ip = strings.TrimSpace(ip); net.ParseIP(ip) != nil {
				ips = append(ips, ip)
			}
		}
	}
	if ip := r.Header.Get("X-Real-Ip"); net.ParseIP(ip) != nil {
		ips = append(ips, ip)
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		ips = append(ips, host)
	}
	return ips
}

func ptrTo[T any](v T) *T { return &v }
