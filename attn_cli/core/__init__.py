"""The ground floor: the data model, the arrays' backends, numbers and errors."""
