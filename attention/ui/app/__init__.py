"""The pages themselves: the specs (pages as data), their prose, the frame that draws any page, nav and the tour."""
