"""runtime.model"""
