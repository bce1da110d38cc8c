// Package fake is an in-memory CloudProvider for tests: it launches "instances"
// that exist only as records, remembers every call, and lets a test inject the
// next error. It has no package-level state and no init(); each test makes its
// own provider with NewCloudProvider. It also generates the synthetic instance
// types of the reference scheduling benchmark (InstanceTypes).
package fake
