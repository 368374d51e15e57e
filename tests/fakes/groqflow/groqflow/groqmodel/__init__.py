from groqflow.groqmodel.groqmodel import GroqEstimatedPerformance, GroqMeasuredPerformance, GroqModel  # noqa: F401
