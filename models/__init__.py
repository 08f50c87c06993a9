"""ResNet-CIFAR models used by the memory-regression suite."""
