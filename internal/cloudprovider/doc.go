// Package cloudprovider is the contract between Dovetail's core and the clouds
// it launches nodes in: the CloudProvider interface every provider implements
// (create, delete, get, list, instance types, drift, repair policies), the
// typed errors the core branches on, and the model of instance types and
// offerings that the scheduling simulator packs pods onto.
//
// The package imports only the API types, the requirement algebra,
// apimachinery and k8s.io/api, never a client or controller-runtime, so that
// the simulator built on it stays pure and providers stay small siblings
// (fake, kwok, aws) of this folder.
package cloudprovider
