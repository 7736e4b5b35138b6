package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestKillDuringWrites kills the server (SIGKILL) while 1,000 creates are
// in flight, five times in a row: after each restart every create the
// server acknowledged is there, and every Service's cluster IP has its
// IPAddress.
func TestKillDuringWrites(t *testing.T) {
	c := startCluster(t)
	acked := map[string]bool{} // "configmaps/name" or "services/name"
	for round := range 5 {
		cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		cfg.QPS, cfg.Burst, cfg.Timeout = 5000, 5000, 10*time.Second
		cs := kubernetes.NewForConfigOrDie(cfg)
		ctx := context.Background()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 1000 {
			wg.Go(func() {
				name := fmt.Sprintf("r%d-%d", round, i)
				var err error
				key := "configmaps/" + name
				if i%10 == 0 {
					key = "services/" + name
					_, err = cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
						Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
				} else {
					_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}, metav1.CreateOptions{})
				}
				if err == nil {
					mu.Lock()
					acked[key] = true
					mu.Unlock()
				}
			})
		}
		// Crash once some of this round's creates are acknowledged (most
		// still in flight).
		before := len(acked)
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			n := len(acked) - before
			mu.Unlock()
			if n >= 50 {
				break
			}
		}
		c.kill()
		wg.Wait()
		if len(acked) == before {
			t.Fatalf("round %d: no create acknowledged in 5 s", round)
		}
		c.start()

		// The client's HTTP/2 connections died with the server: a request
		// may first meet one that was being set up when it was killed
		// ("client conn could not be established"), as any client would,
		// and is tried again.
		var cms *corev1.ConfigMapList
		var svcs *corev1.ServiceList
		waitFor(t, 30*time.Second, "listing after the restart", func() (bool, string) {
			if cms, err = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
				return false, err.Error()
			}
			if svcs, err = cs.CoreV1().Services("default").List(ctx, metav1.ListOptions{}); err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		stored := map[string]bool{}
		for _, o := range cms.Items {
			stored["configmaps/"+o.Name] = true
		}
		for _, o := range svcs.Items {
			stored["services/"+o.Name] = true
		}
		lost := 0
		for k := range acked {
			if !stored[k] {
				lost++
				t.Errorf("round %d: %s was acknowledged and is gone after the crash", round, k)
			}
		}
		t.Logf("round %d: %d writes acknowledged so far, %d lost", round, len(acked), lost)
		ips, err := cs.NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		recorded := map[string]bool{}
		for _, ip := range ips.Items {
			recorded[ip.Name] = true
		}
		for _, s := range svcs.Items {
			if s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone && !recorded[s.Spec.ClusterIP] {
				t.Errorf("round %d: Service %s holds %s without its IPAddress", round, s.Name, s.Spec.ClusterIP)
			}
		}
	}
}
