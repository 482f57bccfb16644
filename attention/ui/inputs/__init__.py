"""Where numbers come in: the matrix editors and the import box under each of them."""
