"""runtime.logs"""
