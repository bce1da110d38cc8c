package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
)

// Path is where the webhook server serves conversion reviews.
const Path = "/convert"

// maxReviewBytes bounds a ConversionReview body. The API server sends every
// object of a list in one review, so this is far above the 3 MiB it accepts
// per object; it only keeps a stray client from exhausting memory.
const maxReviewBytes = 64 << 20

// Handler answers the API server's ConversionReviews (apiextensions.k8s.io/v1)
// for NodePools, NodeClaims and EC2NodeClasses: it converts each object of a
// review with Converter.ConvertJSON and answers Success with every converted
// object, or Failure with a message naming each object that failed and why.
// A request that is not a ConversionReview gets HTTP 400.
type Handler struct {
	// Converter converts one object. Its NodePools getter, if any, is asked
	// at most once per NodePool name and review: a list of NodeClaims of
	// one NodePool reads the NodePool once.
	Converter conversion.Converter
	// Logger is put into each request's context (log.FromContext); the
	// controller-runtime global logger when unset.
	Logger logr.Logger
}

// NodePoolReader returns a NodePoolGetter that reads v1 NodePools from the
// API server through reader (use the manager's API reader, not its cache:
// a conversion must see the NodePool as it is now, and the cache may not be
// started when the first review arrives). NodePools are stored as v1, so
// reading one never calls the conversion webhook again.
func NodePoolReader(reader client.Reader) conversion.NodePoolGetter {
	return conversion.NodePoolGetterFunc(func(ctx context.Context, name string) (*v1.NodePool, error) {
		np := &v1.NodePool{}
		if err := reader.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
			return nil, err // NotFound means "no such NodePool" to the converter
		}
		return np, nil
	})
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if h.Logger.GetSink() != nil {
		ctx = log.IntoContext(ctx, h.Logger)
	}
	logger := log.FromContext(ctx)
	review, status, err := readReview(w, r)
	if err != nil {
		logger.Error(err, "Rejecting conversion request")
		http.Error(w, err.Error(), status)
		return
	}
	request := review.Request
	review.Request = nil
	review.Response = h.convert(ctx, request)
	logger.V(1).Info("Converted objects", "uid", request.UID, "desiredAPIVersion", request.DesiredAPIVersion,
		"objects", len(request.Objects), "status", review.Response.Result.Status)
	if review.Response.Result.Status == metav1.StatusFailure {
		logger.Info("Conversion failed", "uid", request.UID, "desiredAPIVersion", request.DesiredAPIVersion, "reason", review.Response.Result.Message)
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(review); err != nil {
		logger.Error(err, "Writing conversion response", "uid", request.UID)
	}
}

// readReview decodes a ConversionReview with a request from r, or returns
// the HTTP status to answer with.
func readReview(w http.ResponseWriter, r *http.Request) (*apiextensionsv1.ConversionReview, int, error) {
	if r.Method != http.MethodPost {
		return nil, http.StatusMethodNotAllowed, fmt.Errorf("reading conversion review: method %s, want POST", r.Method)
	}
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("reading conversion review: content type %q, want application/json", r.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("reading conversion review: %w", err)
	}
	review := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(body, review); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("decoding conversion review: %w", err)
	}
	if gvk := review.GroupVersionKind(); gvk != apiextensionsv1.SchemeGroupVersion.WithKind("ConversionReview") {
		return nil, http.StatusBadRequest, fmt.Errorf("decoding conversion review: got %s, want apiextensions.k8s.io/v1 ConversionReview", gvk)
	}
	if review.Request == nil {
		return nil, http.StatusBadRequest, errors.New("decoding conversion review: no request")
	}
	return review, http.StatusOK, nil
}

// convert converts every object of request; one failure fails the review
// (the API server would reject the whole answer anyway), but every object
// is tried so that the message names all that fail.
func (h *Handler) convert(ctx context.Context, request *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	converter := h.Converter
	if converter.NodePools != nil {
		converter.NodePools = &nodePoolsOnce{getter: converter.NodePools, pools: map[string]nodePoolResult{}}
	}
	response := &apiextensionsv1.ConversionResponse{UID: request.UID}
	converted := make([]runtime.RawExtension, 0, len(request.Objects))
	var errs []error
	for i, object := range request.Objects {
		out, err := converter.ConvertJSON(ctx, object.Raw, request.DesiredAPIVersion)
		if err != nil {
			errs = append(errs, fmt.Errorf("object %d (%s): %w", i, describe(object.Raw), err))
			continue
		}
		converted = append(converted, runtime.RawExtension{Raw: out})
	}
	if len(errs) > 0 {
		response.Result = metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  metav1.StatusReasonInvalid,
			Message: fmt.Sprintf("converting to %s: %v", request.DesiredAPIVersion, errors.Join(errs...)),
		}
		return response
	}
	response.ConvertedObjects = converted
	response.Result = metav1.Status{Status: metav1.StatusSuccess}
	return response
}

// describe names an object of a review for error messages: its kind,
// apiVersion and name, as far as they can be read.
func describe(raw []byte) string {
	var head struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return "undecodable object"
	}
	return fmt.Sprintf("%s %s %q", head.APIVersion, head.Kind, head.Metadata.Name)
}

// nodePoolResult is the answer of one NodePool lookup.
type nodePoolResult struct {
	pool *v1.NodePool
	err  error
}

// nodePoolsOnce remembers the lookups of one review, so that converting a
// list of NodeClaims reads each NodePool once. Reviews are converted one
// object at a time, so it needs no lock.
type nodePoolsOnce struct {
	getter conversion.NodePoolGetter
	pools  map[string]nodePoolResult
}

// GetNodePool returns the remembered answer for name, or asks the getter.
// Errors other than NotFound are not remembered.
func (n *nodePoolsOnce) GetNodePool(ctx context.Context, name string) (*v1.NodePool, error) {
	if r, ok := n.pools[name]; ok {
		return r.pool, r.err
	}
	pool, err := n.getter.GetNodePool(ctx, name)
	if err == nil || apierrors.IsNotFound(err) {
		n.pools[name] = nodePoolResult{pool: pool, err: err}
	}
	return pool, err
}
