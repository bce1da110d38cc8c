package env

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Intercept wraps a client, such as a manager's (which cannot watch), with
// controller-runtime's interceptor, so that a test can make chosen API
// calls fail or change what they return. Watch is not supported: the
// controllers under test read through the cache and never watch with it.
func Intercept(c client.Client, funcs interceptor.Funcs) client.Client {
	return interceptor.NewClient(withoutWatch{c}, funcs)
}

// withoutWatch makes a client.Client a client.WithWatch whose Watch fails.
type withoutWatch struct{ client.Client }

// Watch is not supported.
func (withoutWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported by this test client")
}
