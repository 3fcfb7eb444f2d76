"""The probe's post-hoc analyses, a protocol added to a finished probe run: the belief probe,
query types by an LLM judge, and how well judges agree with each other and with people."""
