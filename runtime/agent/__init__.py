"""runtime.agent"""
