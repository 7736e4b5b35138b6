package crcontroller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"plainkube.dev/plainkube/examples/crcontroller/api/v1alpha1"
)

// Name is the controller's name, in logs, events and metrics.
const Name = "app-controller"

// NewScheme returns a scheme with the built-in types and the App API.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// AppReconciler reconciles Apps.
type AppReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder recorder.EventRecorder
}

// SetupWithManager registers the reconciler: it runs for each App and for
// each Deployment an App controls.
func (r *AppReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Scheme == nil {
		r.Scheme = mgr.GetScheme()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(Name)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("app").
		For(&v1alpha1.App{}).
		Owns(&appsv1.Deployment{}).
		Complete(r)
}

// +kubebuilder:rbac:groups=demo.plainkube.dev,resources=apps;apps/status,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile makes the App's Deployment match its spec and reports the
// Deployment's state in the App's status.
func (r *AppReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	app := &v1alpha1.App{}
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		// Gone: the garbage collector removes what it owned.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	replicas := int32(1)
	if app.Spec.Replicas != nil {
		replicas = *app.Spec.Replicas
	}

	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		if !dep.CreationTimestamp.IsZero() && !metav1.IsControlledBy(dep, app) {
			return fmt.Errorf("deployment %s exists and is not controlled by App %s", dep.Name, app.Name)
		}
		labels := map[string]string{"app.kubernetes.io/name": app.Name, "app.kubernetes.io/managed-by": Name}
		dep.Spec.Replicas = &replicas
		if dep.Spec.Selector == nil { // immutable once created
			dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		}
		if dep.Spec.Template.Labels == nil {
			dep.Spec.Template.Labels = map[string]string{}
		}
		for k, v := range labels {
			dep.Spec.Template.Labels[k] = v
		}
		if app.Spec.TerminationGracePeriodSeconds != nil {
			dep.Spec.Template.Spec.TerminationGracePeriodSeconds = app.Spec.TerminationGracePeriodSeconds
		}
		// Change the container in place: the API server defaults its other
		// fields, and replacing it would differ from them on every pass.
		if len(dep.Spec.Template.Spec.Containers) == 0 {
			dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app"}}
		}
		dep.Spec.Template.Spec.Containers[0].Image = app.Spec.Image
		return controllerutil.SetControllerReference(app, dep, r.Scheme)
	})
	if err != nil {
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, "DeploymentFailed", "Reconcile", "%v", err)
		return ctrl.Result{}, err
	}
	if op != controllerutil.OperationResultNone {
		logger.Info("deployment "+string(op), "deployment", dep.Name, "replicas", replicas)
	}
	if op == controllerutil.OperationResultCreated {
		r.Recorder.Eventf(app, dep, corev1.EventTypeNormal, "DeploymentCreated", "Create", "created Deployment %s", dep.Name)
	}

	before := app.DeepCopy()
	app.Status.ObservedGeneration = app.Generation
	app.Status.Deployment = dep.Name
	app.Status.Replicas = dep.Status.Replicas
	app.Status.ReadyReplicas = dep.Status.ReadyReplicas
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: app.Generation}
	switch {
	case dep.Status.ObservedGeneration < dep.Generation || dep.Status.UpdatedReplicas < replicas:
		cond.Status, cond.Reason = metav1.ConditionFalse, "RollingOut"
		cond.Message = fmt.Sprintf("%d of %d replicas updated", dep.Status.UpdatedReplicas, replicas)
	case dep.Status.ReadyReplicas < replicas || dep.Status.Replicas > replicas:
		cond.Status, cond.Reason = metav1.ConditionFalse, "Scaling"
		cond.Message = fmt.Sprintf("%d of %d replicas ready (%d running)", dep.Status.ReadyReplicas, replicas, dep.Status.Replicas)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, "AllReplicasReady"
		cond.Message = fmt.Sprintf("%d of %d replicas ready", dep.Status.ReadyReplicas, replicas)
	}
	meta.SetStatusCondition(&app.Status.Conditions, cond)
	if err := r.Status().Patch(ctx, app, client.MergeFrom(before)); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}
