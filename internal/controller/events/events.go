package events

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// NewRecorder returns a recorder of events from component (the event's
// source, e.g. "deployment-controller") that writes them through client
// until ctx ends or stop is called. Objects are referred to through
// client-go's scheme, which knows every built-in kind. Each event is also
// logged at debug level to log, if log is not nil.
func NewRecorder(ctx context.Context, client kubernetes.Interface, component string, log *slog.Logger) (rec record.EventRecorder, stop func()) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	if log != nil {
		b.StartEventWatcher(func(e *corev1.Event) {
			log.Debug("event", "kind", e.InvolvedObject.Kind, "namespace", e.InvolvedObject.Namespace,
				"name", e.InvolvedObject.Name, "type", e.Type, "reason", e.Reason, "message", e.Message)
		})
	}
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}), b.Shutdown
}
