// Command app-controller runs the example App controller against the
// cluster of $KUBECONFIG (or --kubeconfig), for instance `plainkube server`:
//
//	kubectl apply -f examples/crcontroller/config/crd/
//	go run ./examples/crcontroller/cmd/app-controller
//	kubectl apply -f - <<<'{"apiVersion":"demo.plainkube.dev/v1alpha1","kind":"App","metadata":{"name":"web"},"spec":{"image":"nginx","replicas":3}}'
//	kubectl get apps.demo.plainkube.dev
package main

import (
	"flag"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"plainkube.dev/plainkube/examples/crcontroller"
)

func main() {
	metricsAddr := flag.String("metrics-bind-address", "0", `address of the metrics endpoint ("0": none)`)
	probeAddr := flag.String("health-probe-bind-address", ":8081", "address of the health probes")
	leaderElect := flag.Bool("leader-elect", false, "run only while holding a Lease, so that one of several replicas acts")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse() // also --kubeconfig, registered by controller-runtime
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 crcontroller.NewScheme(),
		Metrics:                metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress: *probeAddr,
		LeaderElection:         *leaderElect,
		LeaderElectionID:       "app-controller.demo.plainkube.dev",
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}
	if err := (&crcontroller.AppReconciler{}).SetupWithManager(mgr); err != nil {
		log.Error(err, "setting up the controller")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "adding the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "adding the ready check")
		os.Exit(1)
	}
	log.Info("starting the manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "running the manager")
		os.Exit(1)
	}
}
