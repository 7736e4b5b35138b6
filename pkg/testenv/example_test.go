package testenv_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/pkg/testenv"
)

// A test starts a control plane with the controllers, the scheduler, three
// simulated nodes and its own CRDs; it is stopped when the test ends.
func ExampleStart() {
	testMyController := func(t *testing.T) {
		env := testenv.Start(t,
			testenv.WithControllers(),
			testenv.WithScheduler(),
			testenv.WithSimNodes(3),
			testenv.WithCRDs("config/crd"),
		)
		cs := kubernetes.NewForConfigOrDie(env.Config)
		_ = cs // … run the controller under test against env.Config, create objects, wait for results
	}
	_ = testMyController
}

// Outside a test — in TestMain or a Ginkgo BeforeSuite — Environment has the
// shape of controller-runtime's envtest.Environment: Start, then Stop.
func ExampleEnvironment() {
	e := &testenv.Environment{
		CRDDirectoryPaths:     []string{"testdata/crds"},
		ErrorIfCRDPathMissing: true,
		Options:               []testenv.Option{testenv.WithControllers()},
	}
	cfg, err := e.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop()

	cs := kubernetes.NewForConfigOrDie(cfg)
	cm, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}, metav1.CreateOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created", cm.Namespace+"/"+cm.Name)
	// Output: created default/hello
}
