package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Panics counts the panics the work loops recovered, by loop (a queue's
// name, a SyncLoop's Name, "scheduler"). A server registers it with its
// metrics.
var Panics = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "plainkube_recovered_panics_total",
	Help: "Panics recovered in a work loop (the object is retried with backoff; the process keeps running), by loop.",
}, []string{"loop"})

// PanicError is a recovered panic, returned as the error of the step that
// panicked so that the step is retried like any failure.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Recover, deferred by a step of a work loop, turns a panic of that step
// into *err (a *PanicError): logged with its stack and the given
// attributes (the object the step was working on), and counted in Panics
// under loop. One object's bug then costs that object's retries, not the
// process — which holds the API server and etcd as well.
func Recover(loop string, log *slog.Logger, err *error, attrs ...any) {
	p := recover()
	if p == nil {
		return
	}
	pe := &PanicError{Value: p, Stack: debug.Stack()}
	Panics.WithLabelValues(loop).Inc()
	log.Error("recovered a panic; will retry", append(attrs, "loop", loop, "panic", fmt.Sprint(p), "stack", string(pe.Stack))...)
	*err = pe
}

// SurvivePanics makes client-go's HandleCrash (deferred by its informer
// event handlers and wait loops) log and count a panic, under loop
// "client-go", instead of crashing the process — one process of plainkube
// holds the API server and etcd as well as the loops. Its loops then carry
// on (wait.Until runs the function again). For a process's main.
func SurvivePanics() {
	utilruntime.ReallyCrash = false
	utilruntime.PanicHandlers = append(utilruntime.PanicHandlers, func(context.Context, any) {
		Panics.WithLabelValues("client-go").Inc()
	})
}

// testHook, when set (SetTestHook), runs before each reconcile of a
// ProcessQueue: tests inject a fault (a panic) into one loop for one key.
var testHook atomic.Pointer[func(loop string, key any)]

// SetTestHook makes every ProcessQueue call hook(loop, key) before it
// reconciles key; nil removes it. For fault-injection tests only.
func SetTestHook(hook func(loop string, key any)) {
	if hook == nil {
		testHook.Store(nil)
		return
	}
	testHook.Store(&hook)
}
