package limitranger

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Annotation notes what the plugin filled in.
const Annotation = "kubernetes.io/limit-ranger"

// applyDefaults fills in the missing requests and limits of pod's
// containers from lr's Container items and notes what it set.
func applyDefaults(lr *corev1.LimitRange, pod *corev1.Pod) {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	for _, it := range lr.Spec.Limits {
		if it.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range it.DefaultRequest {
			requests[k] = v.DeepCopy()
		}
		for k, v := range it.Default {
			limits[k] = v.DeepCopy()
		}
	}
	var notes []string
	for i := range pod.Spec.Containers {
		notes = fill(&pod.Spec.Containers[i], requests, limits, "container", notes)
	}
	for i := range pod.Spec.InitContainers {
		notes = fill(&pod.Spec.InitContainers[i], requests, limits, "init container", notes)
	}
	if len(notes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[Annotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
}

func fill(c *corev1.Container, requests, limits corev1.ResourceList, what string, notes []string) []string {
	set := func(into *corev1.ResourceList, from corev1.ResourceList) []string {
		if *into == nil {
			*into = corev1.ResourceList{}
		}
		var names []string
		for k, v := range from {
			if _, ok := (*into)[k]; !ok {
				(*into)[k] = v.DeepCopy()
				names = append(names, string(k))
			}
		}
		sort.Strings(names)
		return names
	}
	setLimits := set(&c.Resources.Limits, limits)
	setRequests := set(&c.Resources.Requests, requests)
	if len(setRequests) > 0 {
		notes = append(notes, strings.Join(setRequests, ", ")+" request for "+what+" "+c.Name)
	}
	if len(setLimits) > 0 {
		notes = append(notes, strings.Join(setLimits, ", ")+" limit for "+what+" "+c.Name)
	}
	return notes
}

// validatePod checks pod against lr's Container and Pod items.
func validatePod(lr *corev1.LimitRange, pod *corev1.Pod) error {
	var errs []error
	for _, it := range lr.Spec.Limits {
		kind := string(it.Type)
		switch it.Type {
		case corev1.LimitTypeContainer:
			for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for i := range cs {
					errs = append(errs, checkItem(kind, it, cs[i].Resources.Requests, cs[i].Resources.Limits)...)
				}
			}
		case corev1.LimitTypePod:
			opts := resourcehelper.PodResourcesOptions{}
			errs = append(errs, checkItem(kind, it, resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts))...)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// validateClaim checks a claim's requests against lr's
// PersistentVolumeClaim items.
func validateClaim(lr *corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) error {
	var errs []error
	for _, it := range lr.Spec.Limits {
		if it.Type != corev1.LimitTypePersistentVolumeClaim {
			continue
		}
		kind := string(it.Type)
		for _, k := range sortedNames(it.Min) {
			if err := minConstraint(kind, k, it.Min[k], pvc.Spec.Resources.Requests, nil); err != nil {
				errs = append(errs, err)
			}
		}
		for _, k := range sortedNames(it.Max) {
			if err := maxRequestConstraint(kind, k, it.Max[k], pvc.Spec.Resources.Requests); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}

func checkItem(kind string, it corev1.LimitRangeItem, requests, limits corev1.ResourceList) []error {
	var errs []error
	for _, k := range sortedNames(it.Min) {
		if err := minConstraint(kind, k, it.Min[k], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range sortedNames(it.Max) {
		if err := maxConstraint(kind, k, it.Max[k], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range sortedNames(it.MaxLimitRequestRatio) {
		if err := ratioConstraint(kind, k, it.MaxLimitRequestRatio[k], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// values compares in milli-units where all three fit, else in units.
func values(req, lim, enforced resource.Quantity) (int64, int64, int64) {
	r, l, e := req.Value(), lim.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		return req.MilliValue(), lim.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func minConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, e := values(req, lim, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, kind, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	case hasLim && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	}
	return nil
}

func maxRequestConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, requests corev1.ResourceList) error {
	req, hasReq := requests[name]
	r, _, e := values(req, resource.Quantity{}, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, kind, enforced.String())
	case r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	}
	return nil
}

func maxConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, e := values(req, lim, enforced)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, kind, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	case hasReq && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	}
	return nil
}

func ratioConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, _ := values(req, lim, enforced)
	if !hasReq || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, enforced.String())
	}
	if !hasLim || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, enforced.String())
	}
	ratio := float64(l) / float64(r)
	observed, max := ratio, float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed, max = ratio*1000, float64(enforced.MilliValue())
	}
	if observed > max {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, enforced.String(), ratio)
	}
	return nil
}
