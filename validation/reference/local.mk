# validation/reference
