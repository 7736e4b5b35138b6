package helmrelease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "helmrelease"

// Finalizer keeps a HelmRelease until its release is uninstalled.
const Finalizer = "helm.plainkube.dev/uninstall"

// OwnerLabel, on the helm releases the controller makes (helm stores
// release labels on its release Secrets), holds the HelmRelease's UID.
const OwnerLabel = "helm.plainkube.dev/helmrelease-uid"

// FieldManager is the manager of the fields the controller's releases
// apply (server-side).
const FieldManager = "plainkube-helm-controller"

// GVR is the HelmRelease resource.
var GVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}

const defaultTimeout = 5 * time.Minute

// Controller reconciles HelmReleases.
type Controller struct {
	controller.Base
	config  *rest.Config
	dynamic dynamic.Interface
	crds    apiextensionsclient.Interface
	sources sources
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller on cfg; cacheDir keeps downloaded charts.
func New(cfg *rest.Config, cacheDir string) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// The SDK names the field manager after the program unless told.
	kube.ManagedFieldsManager = FieldManager
	return &Controller{Base: base, config: cfg, dynamic: dyn, crds: crds,
		sources: sources{client: base.Client, cacheDir: cacheDir}}, nil
}

// Run installs the HelmRelease CRD and reconciles HelmReleases until ctx
// ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if err := ensureCRD(ctx, c.crds); err != nil {
		return err
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(c.dynamic, 0)
	inf := factory.ForResource(GVR)
	b := controller.NewBuilder(controller.Config{Name: Name, Component: "helm-controller", Client: c.Client, Logger: c.Logger})
	b.For(inf.Informer(), GVR.GroupVersion().WithKind(Kind))
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(ctx context.Context, key string) (reconcile.Result, error) {
			return c.reconcile(ctx, rec, inf.Lister(), key)
		}
	})
}

func (c *Controller) reconcile(ctx context.Context, rec record.EventRecorder, lister cache.GenericLister, key string) (reconcile.Result, error) {
	if _, err := lister.Get(key); apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	// Read from the server, not the cache: a step is slow and not
	// idempotent (an upgrade makes a revision), so it must not be decided
	// on a status the cache has not caught up with.
	namespace, name, _ := cache.SplitMetaNamespaceKey(key)
	u, err := c.dynamic.Resource(GVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	hr := &HelmRelease{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hr); err != nil {
		return reconcile.Result{}, nil // the schema keeps this from happening
	}
	r := &run{c: c, hr: hr, obj: u, rec: rec, log: c.Log().With("helmrelease", key)}
	return r.reconcile(ctx)
}

// run is one reconcile of one HelmRelease.
type run struct {
	c   *Controller
	hr  *HelmRelease
	obj *unstructured.Unstructured
	rec record.EventRecorder
	log *slog.Logger
	cfg *action.Configuration
}

func (r *run) reconcile(ctx context.Context) (reconcile.Result, error) {
	hr := r.hr
	getter, err := newRESTGetter(r.c.config, hr.targetNamespace())
	if err != nil {
		return reconcile.Result{}, err
	}
	r.cfg = action.NewConfiguration(action.ConfigurationSetLogger(r.log.Handler()))
	if err := r.cfg.Init(getter, hr.targetNamespace(), "secret"); err != nil {
		return reconcile.Result{}, err
	}
	o := observed{
		deleting:     hr.DeletionTimestamp != nil,
		hasFinalizer: slices.Contains(hr.Finalizers, Finalizer),
		suspend:      hr.Spec.Suspend,
		status:       hr.Status,
		driftPolicy:  hr.Spec.DriftPolicy,
		timeout:      max(r.timeout(hr.Spec.Install), r.timeout(hr.Spec.Upgrade)),
		now:          time.Now(),
	}
	history, err := r.history()
	if err != nil {
		return reconcile.Result{}, err
	}
	var last *release.Release
	if len(history) > 0 {
		last = history[len(history)-1]
		o.last = &releaseInfo{revision: last.Version, status: string(last.Info.Status),
			ours: last.Labels[OwnerLabel] == string(hr.UID), updated: last.Info.LastDeployed}
		o.deployed = slices.ContainsFunc(history, func(rel *release.Release) bool { return rel.Info.Status == releaseDeployed })
	}
	var want *desired
	if !o.deleting && o.hasFinalizer && !o.suspend {
		want, o.sourceErr = r.c.sources.desired(ctx, hr)
		if want != nil {
			o.digest = want.digest
		}
	}
	if o.upToDate() && (o.driftPolicy == DriftReport || o.driftPolicy == DriftCorrect) {
		if o.drift, err = r.drift(last); err != nil {
			return reconcile.Result{}, err
		}
	}
	p := decide(o)
	if p.step != stepNone {
		r.log.Info("reconcile", "step", p.step.String())
	}
	status := hr.Status.DeepCopy()
	status.ObservedGeneration = hr.Generation
	switch p.step {
	case stepAddFinalizer:
		return reconcile.Result{}, r.setFinalizer(ctx, true)
	case stepRemoveFinalizer:
		return reconcile.Result{}, r.setFinalizer(ctx, false)
	case stepUninstall:
		if err := r.uninstall(hr.releaseName()); err != nil {
			r.event(corev1Warning, "UninstallFailed", err.Error())
			return reconcile.Result{}, err
		}
		r.event(corev1Normal, "UninstallSucceeded", fmt.Sprintf("Release %s uninstalled", hr.releaseName()))
		return reconcile.Result{}, r.setFinalizer(ctx, false)
	case stepUnlock:
		last.Info.Status = releaseFailed
		last.Info.Description = fmt.Sprintf("Marked failed by the helm controller: it was left %s, its helm process gone", o.last.status)
		if err := r.cfg.Releases.Update(last); err != nil {
			return reconcile.Result{}, err
		}
		r.event(corev1Warning, "Unlocked", last.Info.Description)
		status.ReleaseStatus = releaseFailed
		return reconcile.Result{Requeue: true}, r.writeStatus(ctx, status)
	case stepInstall, stepUpgrade, stepReinstall:
		// Ready is Unknown while helm works (it may wait minutes).
		progressing := status.DeepCopy()
		setCondition(progressing, ConditionReady, metav1.ConditionUnknown, "Progressing",
			fmt.Sprintf("Running %s of chart %s-%s", p.step, want.chart.Name(), want.chart.Metadata.Version), hr.Generation)
		if err := r.writeStatus(ctx, progressing); err != nil {
			return reconcile.Result{}, err
		}
		r.act(ctx, p.step, want, status)
		return reconcile.Result{}, r.writeStatus(ctx, status) // its event brings the next look
	case stepCorrectDrift:
		err := r.correctDrift(last)
		if err != nil {
			setCondition(status, ConditionDrifted, metav1.ConditionTrue, "CorrectionFailed", err.Error(), hr.Generation)
		} else {
			msg := "Corrected: " + strings.Join(o.drift, ", ")
			setCondition(status, ConditionDrifted, metav1.ConditionFalse, "DriftCorrected", msg, hr.Generation)
			r.event(corev1Normal, "DriftCorrected", msg)
		}
		return reconcile.Result{RequeueAfter: Resync}, r.writeStatus(ctx, status)
	}
	// Nothing to do but report what was seen.
	switch {
	case o.deleting || o.suspend:
		return reconcile.Result{}, nil
	case o.sourceErr != nil:
		// Each read that fails once the last one's back-off is over
		// counts: the next waits longer.
		r.failed(status, "ChartFailed", o.sourceErr)
		if status.LastAttemptedAt == nil || !o.now.Before(status.LastAttemptedAt.Add(backoff(status.Failures))) {
			status.Failures++
			now := metav1.NewTime(o.now)
			status.LastAttemptedAt = &now
		}
		if !hr.Status.Failing(o.sourceErr.Error()) {
			r.event(corev1Warning, "ChartFailed", o.sourceErr.Error())
		}
		p.requeueAfter = max(status.LastAttemptedAt.Add(backoff(status.Failures)).Sub(o.now), time.Second)
	case o.driftPolicy == DriftReport || o.driftPolicy == DriftCorrect:
		if len(o.drift) > 0 {
			msg := "Differs from the release's manifest: " + strings.Join(o.drift, ", ")
			if !hasCondition(hr.Status, ConditionDrifted, metav1.ConditionTrue, msg) {
				r.event(corev1Warning, "DriftDetected", msg)
			}
			setCondition(status, ConditionDrifted, metav1.ConditionTrue, "DriftDetected", msg, hr.Generation)
		} else if o.upToDate() && !apimeta.IsStatusConditionPresentAndEqual(hr.Status.Conditions, ConditionDrifted, metav1.ConditionFalse) {
			// (A DriftCorrected condition stays until the next drift.)
			setCondition(status, ConditionDrifted, metav1.ConditionFalse, "NoDrift", "The release's objects match its manifest", hr.Generation)
		}
	default:
		apimeta.RemoveStatusCondition(&status.Conditions, ConditionDrifted)
	}
	if o.sourceErr == nil && o.upToDate() && !apimeta.IsStatusConditionPresentAndEqual(hr.Status.Conditions, ConditionReady, metav1.ConditionTrue) {
		// What failed (a chart that could not be read or rendered) is
		// mended and the release is as applied.
		msg := fmt.Sprintf("Release %s revision %d is deployed as applied", last.Name, last.Version)
		status.Failures = 0
		succeeded(status, "UpToDate", msg, hr.Generation)
	}
	if last != nil {
		status.ReleaseStatus = string(last.Info.Status)
	}
	return reconcile.Result{RequeueAfter: p.requeueAfter}, r.writeStatus(ctx, status)
}

// act installs, upgrades or reinstalls, and records the outcome in status.
func (r *run) act(ctx context.Context, s step, want *desired, status *Status) {
	hr := r.hr
	now := metav1.Now()
	status.LastAttemptedDigest = want.digest
	status.LastAttemptedAt = &now
	status.ChartName, status.ChartVersion = want.chart.Name(), want.chart.Metadata.Version
	var rel *release.Release
	var err error
	if hr.Spec.CRDs == CRDsCreateReplace {
		err = r.replaceCRDs(want)
	}
	if err == nil && s == stepReinstall {
		if err = r.uninstall(hr.releaseName()); err != nil {
			err = fmt.Errorf("uninstalling the release that never deployed: %w", err)
		}
	}
	verb := "Install"
	if err == nil {
		if s == stepUpgrade {
			verb = "Upgrade"
			rel, err = r.upgrade(ctx, want)
		} else {
			rel, err = r.install(ctx, want)
		}
	}
	if err != nil {
		r.failed(status, verb+"Failed", err)
		status.Failures++
		r.event(corev1Warning, verb+"Failed", err.Error())
		if history, herr := r.history(); herr == nil && len(history) > 0 {
			status.ReleaseStatus = string(history[len(history)-1].Info.Status)
		}
		return
	}
	msg := fmt.Sprintf("%s of release %s revision %d (chart %s-%s) succeeded", verb, rel.Name, rel.Version, status.ChartName, status.ChartVersion)
	status.Failures = 0
	status.LastAppliedDigest, status.LastAppliedRevision = want.digest, rel.Version
	status.ReleaseStatus = string(rel.Info.Status)
	succeeded(status, verb+"Succeeded", msg, hr.Generation)
	r.event(corev1Normal, verb+"Succeeded", msg)
}

// succeeded: Released and Ready, not Failed.
func succeeded(status *Status, reason, msg string, generation int64) {
	setCondition(status, ConditionReleased, metav1.ConditionTrue, reason, msg, generation)
	setCondition(status, ConditionReady, metav1.ConditionTrue, reason, msg, generation)
	setCondition(status, ConditionFailed, metav1.ConditionFalse, reason, msg, generation)
}

func (r *run) failed(status *Status, reason string, err error) {
	g := r.hr.Generation
	setCondition(status, ConditionReady, metav1.ConditionFalse, reason, err.Error(), g)
	setCondition(status, ConditionFailed, metav1.ConditionTrue, reason, err.Error(), g)
	if reason != "ChartFailed" {
		setCondition(status, ConditionReleased, metav1.ConditionFalse, reason, err.Error(), g)
	}
}

// Failing says the status already reports the failure msg (so that a
// reconcile that sees it again neither counts it nor records an Event).
func (s Status) Failing(msg string) bool {
	return hasCondition(s, ConditionFailed, metav1.ConditionTrue, msg)
}

func (r *run) timeout(o ActionOptions) time.Duration {
	if o.Timeout != nil && o.Timeout.Duration > 0 {
		return o.Timeout.Duration
	}
	return defaultTimeout
}

func waitStrategy(o ActionOptions) kube.WaitStrategy {
	if o.Wait != nil && !*o.Wait {
		return kube.HookOnlyStrategy
	}
	return kube.StatusWatcherStrategy
}

func (r *run) labels() map[string]string { return map[string]string{OwnerLabel: string(r.hr.UID)} }

func (r *run) install(ctx context.Context, want *desired) (*release.Release, error) {
	hr, o := r.hr, r.hr.Spec.Install
	i := action.NewInstall(r.cfg)
	i.ReleaseName, i.Namespace, i.CreateNamespace = hr.releaseName(), hr.targetNamespace(), hr.Spec.CreateNamespace
	i.Timeout, i.WaitStrategy, i.WaitForJobs = r.timeout(o), waitStrategy(o), waitStrategy(o) == kube.StatusWatcherStrategy
	i.RollbackOnFailure = o.Atomic
	i.SkipCRDs = hr.Spec.CRDs == CRDsSkip || hr.Spec.CRDs == CRDsCreateReplace
	i.ServerSideApply, i.ForceConflicts = true, true
	i.Labels = r.labels()
	i.Description = "Install by the helm controller (HelmRelease " + hr.Namespace + "/" + hr.Name + ")"
	rel, err := i.RunWithContext(ctx, want.chart, want.values)
	return asRelease(rel, err)
}

func (r *run) upgrade(ctx context.Context, want *desired) (*release.Release, error) {
	hr, o := r.hr, r.hr.Spec.Upgrade
	u := action.NewUpgrade(r.cfg)
	u.Namespace = hr.targetNamespace()
	u.Timeout, u.WaitStrategy, u.WaitForJobs = r.timeout(o), waitStrategy(o), waitStrategy(o) == kube.StatusWatcherStrategy
	u.RollbackOnFailure = o.Atomic
	u.ServerSideApply, u.ForceConflicts = "true", true
	u.MaxHistory = 10
	u.Labels = r.labels()
	u.Description = "Upgrade by the helm controller (HelmRelease " + hr.Namespace + "/" + hr.Name + ")"
	rel, err := u.RunWithContext(ctx, hr.releaseName(), want.chart, want.values)
	return asRelease(rel, err)
}

func asRelease(rel any, err error) (*release.Release, error) {
	if err != nil {
		return nil, err
	}
	switch r := rel.(type) {
	case *release.Release:
		return r, nil
	case release.Release:
		return &r, nil
	}
	return nil, fmt.Errorf("helm returned a release of type %T", rel)
}

func (r *run) uninstall(name string) error {
	u := action.NewUninstall(r.cfg)
	u.Timeout, u.WaitStrategy = r.timeout(r.hr.Spec.Install), kube.StatusWatcherStrategy
	u.IgnoreNotFound = true
	_, err := u.Run(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	return err
}

// history is helm's revisions of the release, oldest first.
func (r *run) history() ([]*release.Release, error) {
	all, err := r.cfg.Releases.History(r.hr.releaseName())
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*release.Release
	for _, rel := range all {
		v, err := asRelease(rel, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b *release.Release) int { return a.Version - b.Version })
	return out, nil
}

func (r *run) setFinalizer(ctx context.Context, on bool) error {
	u := r.obj.DeepCopy()
	finalizers := slices.DeleteFunc(u.GetFinalizers(), func(f string) bool { return f == Finalizer })
	if on {
		finalizers = append(finalizers, Finalizer)
	}
	u.SetFinalizers(finalizers)
	_, err := r.c.dynamic.Resource(GVR).Namespace(u.GetNamespace()).Update(ctx, u, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (r *run) writeStatus(ctx context.Context, status *Status) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return err
	}
	u := r.obj.DeepCopy()
	old, _, _ := unstructured.NestedMap(u.Object, "status")
	if equalJSON(old, content) {
		return nil
	}
	u.Object["status"] = content
	written, err := r.c.dynamic.Resource(GVR).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		r.obj = written
	}
	return err
}

const (
	corev1Normal  = "Normal"
	corev1Warning = "Warning"
)

func (r *run) event(kind, reason, msg string) { r.rec.Event(r.obj, kind, reason, msg) }

func setCondition(s *Status, kind string, status metav1.ConditionStatus, reason, msg string, generation int64) {
	apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: kind, Status: status, Reason: reason,
		Message: msg, ObservedGeneration: generation})
}

func hasCondition(s Status, kind string, status metav1.ConditionStatus, msg string) bool {
	c := apimeta.FindStatusCondition(s.Conditions, kind)
	return c != nil && c.Status == status && c.Message == msg
}

// DefaultCacheDir is where a controller manager outside a server keeps
// downloaded charts.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return dir + "/plainkube/helm"
}
