package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/calltime"
	"github.com/svc-gateway/svc/internal/gateway"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/tracing"
)

// headerOverhead is svc's own time on a gateway answer, in milliseconds:
// the time since the request arrived minus its provider attempts', when the
// answer's headers leave (a stream's: with its first byte).
const headerOverhead = "x-svc-overhead-ms"

// gatewayEndpoint is the endpoint label of a gateway route, or "" for any
// other request. It is told by method and path before the mux routes, so
// that what is refused before a handler (a body too large) is a gateway
// answer too.
func gatewayEndpoint(r *http.Request) string {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		return "chat_completions"
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		return "responses"
	case r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings":
		return "embeddings"
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Path == "/v1/models":
		return "models"
	}
	return ""
}

// gatewayCall is a gateway request on its way: its clock, from its
// arrival; who called, once identified; what its run was, once recorded.
// Its endpoint is "" for an answer under /v1/ that is no call (a stored
// response read, a method or path the mux refused): it carries svc's
// overhead too, and is neither counted nor traced as a call.
type gatewayCall struct {
	endpoint string
	// span is the call's span until the gateway takes it; nil when svc
	// traces nothing.
	span    *tracing.Call
	clock   *calltime.Clock
	id      *auth.Identity
	outcome gateway.Outcome
	// firstByte is when a streamed answer's headers left, from arrival.
	firstByte time.Duration
}

// callOperation is the GenAI operation of an endpoint's calls ("chat"),
// "" for one that makes none (the model list).
func callOperation(endpoint string) string {
	switch endpoint {
	case "chat_completions", "responses":
		return semconv.GenAIOperationNameChat.Value.AsString()
	case "embeddings":
		return semconv.GenAIOperationNameEmbeddings.Value.AsString()
	}
	return ""
}

// newGatewayCall starts a gateway request's clock at start, and returns it
// with ctx carrying the clock and the outcome its run fills.
func newGatewayCall(ctx context.Context, endpoint string, start time.Time) (*gatewayCall, context.Context) {
	gc := &gatewayCall{endpoint: endpoint, clock: calltime.Start(start)}
	ctx = calltime.With(ctx, gc.clock)
	return gc, gateway.WithOutcome(ctx, &gc.outcome)
}

// answering stamps the answer's headers, just before they are written,
// with svc's own time so far.
func (gc *gatewayCall) answering(h http.Header) {
	now := time.Now()
	h[keyOverhead] = []string{strconv.FormatFloat(float64(gc.clock.Overhead(now).Microseconds())/1000, 'f', -1, 64)}
	if strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		gc.firstByte = now.Sub(gc.clock.Started())
	}
}

// observe records the gateway request, once its answer ended, in the
// metrics.
func (s *Server) observe(gc *gatewayCall, status int, end time.Time) {
	if s.Metrics == nil || gc.endpoint == "" {
		return
	}
	c := metrics.GatewayCall{
		Endpoint: gc.endpoint, Status: status, Run: gc.outcome.Run,
		Duration: end.Sub(gc.clock.Started()), Overhead: gc.clock.Overhead(end), FirstByte: gc.firstByte,
	}
	if id := gc.id; id != nil {
		c.Mode, c.App, c.Tenant = string(id.Mode), id.App, id.TenantID
	}
	s.Metrics.ObserveCall(&c)
}

// metrics is GET /metrics (an admin of the default organization, as the
// metrics cover every organization): every metric in Prometheus'
// exposition format. With SVC_METRICS=off there is no such route
// (routes.go).
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	if err := operatorOnly(identity(r), "read the metrics, which cover every organization"); err != nil {
		return err
	}
	s.Metrics.Handler().ServeHTTP(w, r)
	return nil
}
