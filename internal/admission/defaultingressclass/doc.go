// Package defaultingressclass is upstream's DefaultIngressClass admission
// plugin: an Ingress created without spec.ingressClassName (and without the
// older kubernetes.io/ingress.class annotation) gets the IngressClass
// annotated ingressclass.kubernetes.io/is-default-class: "true" — the newest
// of them when several are.
package defaultingressclass
