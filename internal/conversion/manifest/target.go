package manifest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
)

// v1beta1HopLimit is the v1beta1 default of metadataOptions.httpPutResponseHopLimit;
// v1 defaults to 1, which keeps containers without host networking from
// reaching the instance metadata service.
const v1beta1HopLimit = 2

// toTarget converts every decoded object to the target version with the
// webhook's conversion functions. NodeClaims find their NodePool among the
// NodePools of the input, whatever version they were written in.
func (c *converter) toTarget() {
	pools := conversion.StaticNodePools{}
	for _, it := range c.items {
		for _, o := range it.objects {
			if it.err != nil {
				continue
			}
			var pool *v1.NodePool
			switch np := o.obj.(type) {
			case *v1.NodePool:
				pool = np
			case *v1beta1.NodePool:
				pool, _ = c.convert.NodePoolToV1(np)
			}
			if pool != nil && pools[pool.Name] == nil {
				pools[pool.Name] = pool
			}
		}
	}
	c.convert.NodePools = pools

	for _, it := range c.items {
		if it.err != nil || it.passThrough {
			continue
		}
		for _, o := range it.objects {
			gvk := o.obj.GetObjectKind().GroupVersionKind()
			converted, err := c.convert.Convert(context.Background(), o.obj, gvk.Group+"/"+c.opts.To)
			if err != nil {
				it.err = &DocumentError{Source: it.doc.source, Index: it.doc.index, Item: it.doc.item, Line: it.doc.line, Kind: it.doc.typeMeta.Kind, Name: it.doc.name, Err: err}
				break
			}
			if gvk.Version != c.opts.To {
				o.paths = nil // paths of the decoded form no longer apply
			}
			o.obj = converted
			c.finish(it.doc, converted)
		}
	}
}

// finish adjusts a converted object for a manifest and warns about what the
// user must check.
func (c *converter) finish(d *document, obj runtime.Object) {
	meta := objectMeta(obj)
	if c.opts.To == TargetV1beta1 {
		if _, ok := meta.Annotations[conversion.V1FieldsAnnotationKey]; ok {
			c.warn(d, "v1 settings without a v1beta1 field are kept in annotation %s", conversion.V1FieldsAnnotationKey)
		}
		if _, ok := meta.Annotations[conversion.EC2NodeClassV1FieldsAnnotationKey]; ok {
			c.warn(d, "v1 settings without a v1beta1 field are kept in annotation %s", conversion.EC2NodeClassV1FieldsAnnotationKey)
		}
		return
	}
	// The v1beta1 spelling of the reference matters only to a v1beta1 reader;
	// a v1 manifest is cleaner without it.
	delete(meta.Annotations, v1.NodeClassReferenceAnnotationKey)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
	nc, ok := obj.(*awsv1.EC2NodeClass)
	if !ok {
		return
	}
	if nc.Spec.MetadataOptions == nil {
		nc.Spec.MetadataOptions = &awsv1.MetadataOptions{}
	}
	if nc.Spec.MetadataOptions.HTTPPutResponseHopLimit == nil {
		nc.Spec.MetadataOptions.HTTPPutResponseHopLimit = ptr.To[int64](v1beta1HopLimit)
		c.warn(d, "spec.metadataOptions.httpPutResponseHopLimit set to %d, the v1beta1 default, so nodes behave as before (v1 defaults to 1)", v1beta1HopLimit)
	}
	if specifiers, ok := nc.Annotations[awsv1.AnnotationUbuntuCompatibility]; ok {
		c.warn(d, "amiFamily Ubuntu does not exist in v1: converted to AL2 with Ubuntu's root volume (annotation %s)", awsv1.AnnotationUbuntuCompatibility)
		if slices.Contains(strings.Split(specifiers, ","), "incompatible") {
			c.warn(d, "without amiSelectorTerms the class gets the placeholder term {id: ami-placeholder} and Dovetail launches no node from it: select your Ubuntu AMIs in spec.amiSelectorTerms")
		}
	}
}

// poolRef is a v1 NodePool of the input and the kubelet settings it carries in
// the v1beta1-kubelet-conversion annotation.
type poolRef struct {
	pool    *v1.NodePool
	item    *item
	kubelet *awsv1.KubeletConfiguration
}

// moveKubelet moves NodePools' kubelet settings to the EC2NodeClass they
// reference, where v1 keeps them, when that class was converted in this run
// and every NodePool of the input that references it has the same settings.
// Otherwise the settings stay in the NodePool's annotation, which Dovetail
// still honours, and a warning says what to do.
func (c *converter) moveKubelet() {
	classes := map[string]*awsv1.EC2NodeClass{}
	users := map[string][]poolRef{}
	var order []string
	for _, it := range c.items {
		if it.err != nil {
			continue
		}
		for _, o := range it.objects {
			switch obj := o.obj.(type) {
			case *awsv1.EC2NodeClass:
				if !it.passThrough && classes[obj.Name] == nil {
					classes[obj.Name] = obj
				}
			case *v1.NodePool:
				ref := obj.Spec.Template.Spec.NodeClassRef
				if ref == nil || ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
					continue
				}
				p := poolRef{pool: obj, item: it}
				if raw, ok := obj.Annotations[v1.KubeletCompatibilityAnnotationKey]; ok {
					k := &v1beta1.KubeletConfiguration{}
					if json.Unmarshal([]byte(raw), k) == nil {
						p.kubelet = ptr.To(awsv1.KubeletConfiguration(*k))
					}
				}
				if _, seen := users[ref.Name]; !seen {
					order = append(order, ref.Name)
				}
				users[ref.Name] = append(users[ref.Name], p)
			}
		}
	}

	for _, name := range order {
		pools := users[name]
		var withKubelet []poolRef
		for _, p := range pools {
			if p.kubelet != nil {
				withKubelet = append(withKubelet, p)
			}
		}
		if len(withKubelet) == 0 {
			continue
		}
		class := classes[name]
		if class == nil {
			for _, p := range withKubelet {
				c.warn(p.item.doc, "kubelet settings kept in annotation %s: EC2NodeClass %q is not converted in this input; move them to its spec.kubelet, then remove the annotation",
					v1.KubeletCompatibilityAnnotationKey, name)
			}
			continue
		}
		want := withKubelet[0].kubelet
		if class.Spec.Kubelet != nil {
			want = class.Spec.Kubelet
		}
		agree := len(withKubelet) == len(pools)
		for _, p := range pools {
			agree = agree && conversion.Semantic().DeepEqual(p.kubelet, want)
		}
		if !agree {
			for _, p := range withKubelet {
				c.warn(p.item.doc, "kubelet settings kept in annotation %s: the NodePools of EC2NodeClass %q differ in kubelet settings, which v1 keeps on the EC2NodeClass; "+
					"give each NodePool its own EC2NodeClass with its spec.kubelet", v1.KubeletCompatibilityAnnotationKey, name)
			}
			continue
		}
		class.Spec.Kubelet = want
		for _, p := range pools {
			if !p.item.passThrough {
				delete(p.pool.Annotations, v1.KubeletCompatibilityAnnotationKey)
				if len(p.pool.Annotations) == 0 {
					p.pool.Annotations = nil
				}
				c.warn(p.item.doc, "kubelet settings moved to EC2NodeClass %q (spec.kubelet)", name)
			}
		}
	}
}
