// ImagePipeline module. See DESIGN.md §3.
