package events

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

func TestRecorderWritesAndAggregatesEvents(t *testing.T) {
	ctx := context.Background()
	cs := controllertest.Clientset(t, controllertest.StartServer(t))
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, stop := NewRecorder(ctx, cs, "test-controller", nil)
	defer stop()
	for range 3 {
		rec.Eventf(cm, corev1.EventTypeNormal, "Poked", "Poked %s", cm.Name)
	}
	var got corev1.Event
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == "Poked" && e.Count == 3 {
				got = e
				return len(list.Items) == 1, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for one event counted 3 times: %v", err)
	}
	if got.Message != "Poked cm" || got.Source.Component != "test-controller" || got.InvolvedObject.Kind != "ConfigMap" ||
		got.InvolvedObject.UID != cm.UID || got.Type != corev1.EventTypeNormal {
		t.Errorf("event = %+v", got)
	}
}
