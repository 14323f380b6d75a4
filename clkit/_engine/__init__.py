"""The kernel library's engine: dispatch over devices and bands, the convolution filter and its tiers, argument checks."""
