// Package establish is upstream's establishing controller for
// CustomResourceDefinitions: once the API server serves a CRD's routes
// (the serving controller reports it through Queue), a CRD whose names are
// accepted gets Established=True with reason InitialNamesAccepted — or
// Established=False, InvalidCABundle, when its conversion webhook's
// caBundle holds no usable certificate.
package establish
