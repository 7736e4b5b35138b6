package admission

import (
	"context"
	"sync/atomic"
	"time"
)

// WebhookTime adds up how long one request waited on admission webhooks,
// which the API server leaves out of its SLI latency
// (apiserver_request_sli_duration_seconds): a webhook's latency is its
// operator's, not the server's.
type WebhookTime struct{ ns atomic.Int64 }

type webhookTimeKey struct{}

// TrackWebhookTime returns ctx carrying a new WebhookTime.
func TrackWebhookTime(ctx context.Context) (context.Context, *WebhookTime) {
	wt := &WebhookTime{}
	return context.WithValue(ctx, webhookTimeKey{}, wt), wt
}

// AddWebhookTime adds d to the WebhookTime ctx carries, if any.
func AddWebhookTime(ctx context.Context, d time.Duration) {
	if wt, ok := ctx.Value(webhookTimeKey{}).(*WebhookTime); ok {
		wt.ns.Add(int64(d))
	}
}

// Total is the time added so far; 0 for a nil WebhookTime.
func (wt *WebhookTime) Total() time.Duration {
	if wt == nil {
		return 0
	}
	return time.Duration(wt.ns.Load())
}
