package rootcacert

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

func TestRootCAConfigMap(t *testing.T) {
	cfg := controllertest.StartServer(t)
	if _, err := New(cfg, nil); err == nil {
		t.Error("New accepted an empty CA")
	}
	c, err := New(cfg, []byte(testCA))
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)
	cs := controllertest.Clientset(t, cfg)
	bg := context.Background()

	waitRight := func(ns string, notUID string) *corev1.ConfigMap {
		t.Helper()
		var cm *corev1.ConfigMap
		err := wait.PollUntilContextTimeout(bg, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			cm, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
			return err == nil && cm.Data[DataKey] == testCA && len(cm.Data) == 1 &&
				cm.Annotations[DescriptionAnnotation] == Description && string(cm.UID) != notUID, nil
		})
		if err != nil {
			t.Fatalf("%s/%s: %+v", ns, ConfigMapName, cm)
		}
		return cm
	}
	waitRight("kube-system", "")
	if _, err := cs.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := waitRight("team", "")

	// Edited, it is restored.
	cm.Data = map[string]string{DataKey: "forged", "extra": "x"}
	if _, err := cs.CoreV1().ConfigMaps("team").Update(bg, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm = waitRight("team", "")

	// Deleted, it comes back.
	if err := cs.CoreV1().ConfigMaps("team").Delete(bg, ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRight("team", string(cm.UID))
}
