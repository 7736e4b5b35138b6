// Package servicecidr is the ServiceCIDR controller (upstream's
// service-cidr-controller): every ServiceCIDR gets the protection finalizer
// and a Ready condition; a ServiceCIDR being deleted keeps its finalizer,
// with Ready False (reason Terminating), while an IPAddress inside it is
// not also inside another ready ServiceCIDR, and loses it once none is —
// after a grace period in which the Service allocators (which stop using
// it as soon as they see the deletion) may still be finishing an
// allocation. Observe reads the caches, Plan decides, Apply writes.
package servicecidr
