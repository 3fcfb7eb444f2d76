"""The sweep's references beside the models: the ideal observer limited by contrast (its
physical reference, W about 0) and a person answering the sweep's questions."""
