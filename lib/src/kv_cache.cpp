// Placeholder: see the issue that implements it.
