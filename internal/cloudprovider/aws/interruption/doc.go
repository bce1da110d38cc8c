// Package interruption is the AWS provider's interruption controller.
package interruption
